#pragma once
/// @file batchnorm.hpp
/// Batch normalisation with statistics synchronised over the trainers (BatchNorm1d/2d).

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "conflux/core/host_device.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {

/// The arithmetic of one channel of batch normalisation, written once for every device (the CPU
/// layer and the GPU kernels run it): 1 / std of a variance.
CONFLUX_HD inline float batchnorm_invstd(double var, double eps) {
  return static_cast<float>(1.0 / sqrt(var + eps));
}

/// A channel's batch statistics from its sums over the (global) batch: the mean and 1 / std in
/// float, and the running statistics moved towards them (PyTorch's unbiased variance) when
/// there are at least two values.
CONFLUX_HD inline void batchnorm_statistics(double sum, double sum_sq, double count,
                                            double momentum, double eps, float& mean, float& invstd,
                                            float& running_mean, float& running_var) {
  const double m = count > 0.0 ? sum / count : 0.0;
  double var = count > 0.0 ? sum_sq / count - m * m : 0.0;
  if (var < 0.0) var = 0.0;
  mean = static_cast<float>(m);
  invstd = batchnorm_invstd(var, eps);
  if (count < 2.0) return;  // no variance estimate: keep the running statistics
  running_mean = static_cast<float>((1.0 - momentum) * running_mean + momentum * m);
  running_var =
      static_cast<float>((1.0 - momentum) * running_var + momentum * var * count / (count - 1.0));
}

/// sum(dy * xhat) of a channel from its sums of dy and of dy * x.
CONFLUX_HD inline double batchnorm_dy_xhat(float mean, float invstd, double sum_dy,
                                           double sum_dy_x) {
  return invstd * (sum_dy_x - mean * sum_dy);
}

/// A channel's input gradient dx = dy * a + (x - mean) * b + c.
struct BatchNormInputGrad {
  float a, b, c;
};

/// The coefficients of a channel's input gradient from the (global) sums of dy and dy * xhat
/// over `count` values; `through_stats`: the forward used batch statistics (and count > 0), so
/// the gradient also flows through the mean and the variance.
CONFLUX_HD inline BatchNormInputGrad batchnorm_input_grad(float weight, float invstd, double sum_dy,
                                                          double sum_dy_xhat, double count,
                                                          bool through_stats) {
  const double a = static_cast<double>(weight) * invstd;
  return {static_cast<float>(a),
          through_stats ? static_cast<float>(-a * invstd * sum_dy_xhat / count) : 0.0f,
          through_stats ? static_cast<float>(-a * sum_dy / count) : 0.0f};
}

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
