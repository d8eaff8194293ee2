#pragma once
/// @file flatten.hpp
/// Reshape of each sample to a feature vector: {C, H, W} -> {C*H*W}.

#include <string>

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// Flattens every sample (row-major, so the values keep their order); a {F} input passes
/// through unchanged.
class Flatten final : public Layer {
 public:
  std::string type() const override { return "flatten"; }
  SampleShape output_shape(const SampleShape& input) const override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
};

}  // namespace conflux::model
