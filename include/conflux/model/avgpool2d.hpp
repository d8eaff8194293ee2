#pragma once
/// @file avgpool2d.hpp
/// Average pooling: over windows (avgpool) and over the whole plane (globalavgpool, the
/// pooling before a ResNet's classifier).

#include <string>

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// Average over kernel x kernel windows, input [N, C, H, W] -> [N, C, H', W'] with
/// H' = (H - kernel) / stride + 1 (no padding; a partial last window is dropped, as in
/// PyTorch's AvgPool2d). Stride 0 means the kernel, as for maxpool.
class AvgPool2d final : public Layer {
 public:
  /// kernel >= 1; stride >= 0 (0 -> kernel).
  AvgPool2d(int kernel, int stride);
  std::string type() const override { return "avgpool"; }
  std::string describe() const override;
  SampleShape output_shape(const SampleShape& input) const override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;

 private:
  int kernel_;
  int stride_;
};

/// Mean of each channel's plane: [N, C, H, W] -> [N, C] (one feature per channel, ready for a
/// linear layer; PyTorch writes it AdaptiveAvgPool2d(1) + Flatten, ONNX GlobalAveragePool +
/// Flatten).
class GlobalAvgPool final : public Layer {
 public:
  std::string type() const override { return "globalavgpool"; }
  SampleShape output_shape(const SampleShape& input) const override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
};

}  // namespace conflux::model
