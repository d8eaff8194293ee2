#pragma once
/// @file batchnorm.hpp
/// Batch normalisation with statistics synchronised over the trainers (BatchNorm1d/2d).

#include <span>
#include <string>
#include <vector>

#include "conflux/model/layer.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

/// Normalises each channel of [N, C, H, W] (statistics over N, H, W) or each feature of
/// [N, F] (statistics over N), then scales and shifts it: y = xhat * weight + bias.
///
/// Training pass: the per-channel sums of the local batch go through pass.reducer, so the
/// statistics (and the input gradient's sums) are those of the global batch over all trainers.
/// The reducer is a collective: every trainer calls it once per training forward and once per
/// backward that wants the input gradient, even with an empty local batch. The running
/// statistics are updated as PyTorch does (unbiased variance, count of the global batch); a
/// global batch of fewer than 2 values per channel leaves them unchanged (PyTorch raises).
///
/// Evaluation pass, and the one-input forward/backward: running statistics, frozen; backward
/// then is the gradient of that fixed affine map.
class BatchNorm final : public Layer {
 public:
  /// Layer with the running-statistics `momentum` in [0, 1] and variance `eps` > 0.
  BatchNorm(double momentum, double eps);
  std::string type() const override { return "batchnorm"; }
  std::string describe() const override;
  SampleShape output_shape(const SampleShape& input) const override;
  /// "weight" {C} (init 1) and "bias" {C} (init 0), PyTorch's names.
  std::vector<ParamInfo> param_layout(const SampleShape& input) const override;
  /// "running_mean" {C} (init 0) and "running_var" {C} (init 1).
  std::vector<ParamInfo> buffer_layout(const SampleShape& input) const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  void bind_buffers(std::span<float> buffers) override;
  /// Sets weight, bias and the running statistics; draws nothing from `rng`.
  void init_params(Rng& rng) override;
  void set_input_grad_needed(bool needed) noexcept override { input_grad_needed_ = needed; }
  bool fuse_relu() noexcept override { return relu_.enable(); }

  /// Evaluation pass.
  void forward(const Tensor& in, Tensor& out) override;
  /// Gradient of the evaluation pass (running statistics held fixed).
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
  void forward_pass(const Pass& pass, Inputs in, Tensor& out) override;
  void backward_pass(const Pass& pass, Inputs in, const Tensor& grad_out,
                     InputGrads grad_in) override;

 private:
  void run_forward(bool training, StatReducer* reducer, const Tensor& in, Tensor& out);
  void batch_statistics(StatReducer* reducer, const Tensor& in);
  void run_backward(StatReducer* reducer, const Tensor& in, const Tensor& grad_out,
                    Tensor* grad_in);
  // dy_gated_ = grad_out where the last output is positive, else 0 (the fused ReLU).
  const Tensor& gate_relu(const Tensor& grad_out);

  double momentum_;
  double eps_;
  int channels_ = 0;  // known once bound
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
  std::span<float> running_mean_, running_var_;
  bool input_grad_needed_ = true;
  FusedRelu relu_;
  Tensor dy_gated_;  // the gated output gradient

  // The last forward: its mode, the global count and the statistics it normalised with.
  bool trained_ = false;
  double count_ = 0.0;
  std::vector<float> mean_, invstd_;
  // Scratch: per-channel coefficients and sums, reused across steps.
  std::vector<float> coef_a_, coef_b_, coef_c_;
  std::vector<double> sums_, run_u_, run_uv_;
};

}  // namespace conflux::model
