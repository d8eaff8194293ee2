#pragma once
/// @file conv_shape.hpp
/// The geometry of one batch's convolution on a device: NHWC activations and KRSC weights
/// (cuDNN's layouts), the batch included (cuDNN's algorithm choice and workspace depend on it).
/// Free of CUDA types: the device kernels and the executors share it.

#include <compare>
#include <cstddef>

#include "conflux/core/host_device.hpp"

namespace conflux::gpu {

/// A convolution as model::Conv2d computes it: cross-correlation, square kernel, equal stride
/// and zero padding in both dimensions, no dilation, one group.
struct ConvShape {
  int batch = 0;
  int channels = 0;  ///< C, input channels
  int height = 0;
  int width = 0;
  int out_channels = 0;  ///< K
  int kernel = 0;        ///< square kernel side
  int stride = 1;
  int padding = 0;

  /// (height + 2 padding - kernel) / stride + 1, as model::Conv2d.
  CONFLUX_HD int output_height() const noexcept {
    return (height + 2 * padding - kernel) / stride + 1;
  }
  /// (width + 2 padding - kernel) / stride + 1.
  CONFLUX_HD int output_width() const noexcept {
    return (width + 2 * padding - kernel) / stride + 1;
  }
  /// Elements of x (and dx): N*H*W*C.
  std::size_t input_elements() const noexcept {
    return static_cast<std::size_t>(batch) * height * width * channels;
  }
  /// Elements of y (and dy): N*H'*W'*K.
  std::size_t output_elements() const noexcept {
    return static_cast<std::size_t>(batch) * output_height() * output_width() * out_channels;
  }
  /// Elements of w (and dw): K*kernel*kernel*C.
  std::size_t weight_elements() const noexcept {
    return static_cast<std::size_t>(out_channels) * kernel * kernel * channels;
  }

  auto operator<=>(const ConvShape&) const = default;
};

}  // namespace conflux::gpu
