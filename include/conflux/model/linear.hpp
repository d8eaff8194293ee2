#pragma once
/// @file linear.hpp
/// Fully connected layer: y = x W^T + b on a batch of feature vectors.

#include <span>
#include <string>
#include <vector>

#include "conflux/model/layer.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

/// Linear layer, input [N, in] -> output [N, out]; parameters weight {out, in} and bias {out}.
/// An image input {C, H, W} is rejected: configs insert an explicit flatten layer.
class Linear final : public Layer {
 public:
  /// Layer with `out_features` outputs (> 0); the input width is learnt from param_layout.
  explicit Linear(int out_features);
  std::string type() const override { return "linear"; }
  SampleShape output_shape(const SampleShape& input) const override;
  std::vector<ParamInfo> param_layout(const SampleShape& input) const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  void init_params(Rng& rng) override;
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;

  void set_input_grad_needed(bool needed) noexcept override { input_grad_needed_ = needed; }
  bool fuse_relu() noexcept override { return relu_.enable(); }
  std::string describe() const override;

 private:
  int out_;
  int in_ = 0;  // known once bound: params hold out*(in+1) floats
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
  bool input_grad_needed_ = true;
  FusedRelu relu_;
  std::vector<float> dy_gated_;  // the output gradient gated by the fused ReLU
};

}  // namespace conflux::model
