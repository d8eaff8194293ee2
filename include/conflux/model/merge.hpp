#pragma once
/// @file merge.hpp
/// Layers that join the outputs of several layers: element-wise add (skip connections) and
/// concatenation along the channels.

#include <string>

#include "conflux/model/layer.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

/// Shared by the merge layers: two or more inputs, no one-input form.
class MergeLayer : public Layer {
 public:
  std::size_t arity() const override { return 0; }
  /// Merge layers have no one-input form; the model always calls the *_pass methods.
  SampleShape output_shape(const SampleShape& input) const override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
};

/// y = x0 + x1 + ... (inputs of one shape, summed in input order).
class Add final : public MergeLayer {
 public:
  std::string type() const override { return "add"; }
  SampleShape output_shape_of(std::span<const SampleShape> inputs) const override;
  void forward_pass(const Pass& pass, Inputs in, Tensor& out) override;
  void backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                     InputGrads grad_in) override;
  bool fuse_relu() noexcept override { return relu_.enable(); }

 private:
  FusedRelu relu_;
};

/// Inputs [C_i, H, W] (or [F_i]) joined into [sum C_i, H, W], in input order.
class Concat final : public MergeLayer {
 public:
  std::string type() const override { return "concat"; }
  SampleShape output_shape_of(std::span<const SampleShape> inputs) const override;
  void forward_pass(const Pass& pass, Inputs in, Tensor& out) override;
  void backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                     InputGrads grad_in) override;
};

}  // namespace conflux::model
