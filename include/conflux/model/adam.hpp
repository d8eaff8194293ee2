#pragma once
/// @file adam.hpp
/// Adam and AdamW with PyTorch's semantics (torch.optim.Adam / torch.optim.AdamW, amsgrad off).

#include <span>
#include <string_view>

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

 private:
  AdamOptions options_;
};

}  // namespace conflux::model
