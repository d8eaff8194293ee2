#pragma once
/// @file relu.hpp
/// Rectified linear unit, element-wise.

#include <string>

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// y = max(x, 0); the gradient is taken as 0 at x <= 0 (as in PyTorch). Any input shape.
class Relu final : public Layer {
 public:
  std::string type() const override { return "relu"; }
  SampleShape output_shape(const SampleShape& input) const override { return input; }
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
};

}  // namespace conflux::model
