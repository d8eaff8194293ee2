#pragma once
/// @file adam.hpp
/// Adam and AdamW with PyTorch's semantics (torch.optim.Adam / torch.optim.AdamW, amsgrad off).

#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>

#include "conflux/core/host_device.hpp"
#include "conflux/model/optimizer.hpp"

namespace conflux::model {

/// Adam hyper-parameters (PyTorch's names and defaults).
struct AdamOptions {
  double lr = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  ///< AdamW: w *= 1 - lr * wd before the step, instead of g += wd * w
};

/// One step's scalars, formed as PyTorch's _single_tensor_adam forms them: in double (Python
/// floats), each rounded to float where it meets a float tensor.
struct AdamScalars {
  float wd, decay, weight1, beta2, weight2, step_size, bc2_sqrt, eps;
  bool coupled;    ///< Adam with weight decay: g' = g + wd * w
  bool decoupled;  ///< AdamW with weight decay: w *= 1 - lr * wd first
  bool lerp_low;   ///< |1 - beta1| < 0.5: torch's lerp takes its low-weight formula
};

/// The scalars of update number `step` (from 1) with `options`.
AdamScalars adam_scalars(const AdamOptions& options, std::uint64_t step);

/// One element of an Adam step; the choices are template arguments, so that a CPU loop over
/// it has no branch and vectorises.
template <bool kCoupled, bool kDecoupled, bool kLerpLow>
CONFLUX_HD inline void adam_element(const AdamScalars& s, float& w, float g, float& m, float& v) {
  if constexpr (kDecoupled) w *= s.decay;  // param.mul_(1 - lr * weight_decay)
  float d = g;
  if constexpr (kCoupled) d = g + s.wd * w;  // grad.add(param, alpha=weight_decay)
  // exp_avg.lerp_(grad, 1 - beta1): torch's lerp switches formula at weight 0.5.
  const float diff = d - m;
  if constexpr (kLerpLow) {
    m = m + s.weight1 * diff;
  } else {
    m = d - diff * (1.0f - s.weight1);
  }
  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  v = v * s.beta2 + s.weight2 * d * d;
  // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps);
  // param.addcdiv_(exp_avg, denom, value=-step_size)
  const float denom = sqrtf(v) / s.bc2_sqrt + s.eps;
  w = w + s.step_size * m / denom;
}

/// adam_element with the choices of `s` (one thread per element on a device).
CONFLUX_HD inline void adam_element(const AdamScalars& s, float& w, float g, float& m, float& v) {
  if (s.lerp_low) {
    if (s.coupled) return adam_element<true, false, true>(s, w, g, m, v);
    if (s.decoupled) return adam_element<false, true, true>(s, w, g, m, v);
    return adam_element<false, false, true>(s, w, g, m, v);
  }
  if (s.coupled) return adam_element<true, false, false>(s, w, g, m, v);
  if (s.decoupled) return adam_element<false, true, false>(s, w, g, m, v);
  adam_element<false, false, false>(s, w, g, m, v);
}

/// At step t (from 1): g' = g + wd * w (Adam) or w *= 1 - lr * wd (AdamW);
/// m += (1 - beta1) (g' - m);  v = beta2 v + (1 - beta2) g'^2;
/// w -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
class Adam final : public Optimizer {
 public:
  /// Optimiser for `num_params` floats; InputError on bad options.
  Adam(AdamOptions options, std::size_t num_params);
  std::string_view name() const noexcept override { return options_.decoupled ? "adamw" : "adam"; }
  void step(std::span<float> params, std::span<const float> grads) override;
  void set_lr(double lr) noexcept override { options_.lr = lr; }
  double lr() const noexcept override { return options_.lr; }
  /// First moment ("exp_avg").
  std::span<const float> exp_avg() const noexcept { return buffer(0); }
  /// Second moment ("exp_avg_sq").
  std::span<const float> exp_avg_sq() const noexcept { return buffer(1); }
  /// The scalars of the next step().
  AdamScalars next_scalars() const { return adam_scalars(options_, steps_ + 1); }

 private:
  AdamOptions options_;
};

}  // namespace conflux::model
