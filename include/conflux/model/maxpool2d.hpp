#pragma once
/// @file maxpool2d.hpp
/// 2-D max pooling with optional implicit -infinity padding; backward routes each gradient to its
/// window's arg-max.

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// Max pooling over kernel x kernel windows, input [N, C, H, W] -> [N, C, H', W'] with
/// H' = (H + 2 padding - kernel) / stride + 1 (a partial last window is dropped, as in PyTorch).
///
/// Stride: 0 means "same as the kernel" (non-overlapping windows); any other value is used
/// as given, so stride 1 is an overlapping pool. This follows docs/config.md ("0 = same as the
/// window") and the config loader, which maps an absent or 0 stride to the kernel before the
/// spec reaches make_layer(). Beware that a LayerSpec built in C++ defaults to stride 1 (the
/// conv2d default): write .stride = 0 for the usual pooling. Ties go to the first maximum in
/// row-major window order. Padding is PyTorch's: padded positions are -infinity and never win,
/// and at most half the kernel, so every window holds a real element and its arg-max is one.
class MaxPool2d final : public Layer {
 public:
  /// kernel >= 1; stride >= 0 as described above (0 -> kernel); 0 <= padding <= kernel / 2.
  MaxPool2d(int kernel, int stride, int padding = 0);
  std::string type() const override { return "maxpool"; }
  SampleShape output_shape(const SampleShape& input) const override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;

  /// Effective stride (after the 0 -> kernel rule).
  int stride() const noexcept { return stride_; }
  /// Implicit -infinity padding on each side.
  int padding() const noexcept { return padding_; }
  std::string describe() const override;

 private:
  int kernel_;
  int stride_;
  int padding_;
  // For every output element of the last forward: index of its maximum within its input plane
  // (H*W), so backward is a scatter without re-scanning windows.
  std::vector<std::int32_t> argmax_;
};

}  // namespace conflux::model
