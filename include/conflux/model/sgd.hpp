#pragma once
/// @file sgd.hpp
/// SGD with momentum, Nesterov momentum and (coupled, L2) weight decay, with PyTorch's
/// semantics (torch.optim.SGD, dampening 0).

#include <span>
#include <string_view>
#include <vector>

#include "conflux/model/optimizer.hpp"

namespace conflux::model {

/// The name of SGD's one state buffer (PyTorch's state_dict name).
inline constexpr const char* kSgdMomentumBuffer = "momentum_buffer";

/// SGD hyper-parameters.
struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;  ///< needs momentum > 0, as in PyTorch
};

/// d = g + wd * w;  v = momentum * v + d (v = d on the first step);
/// w -= lr * v, or with Nesterov w -= lr * (d + momentum * v).
class Sgd final : public Optimizer {
 public:
  /// Optimiser for a parameter buffer of `num_params` floats; InputError on bad options.
  Sgd(SgdOptions options, std::size_t num_params);
  std::string_view name() const noexcept override { return "sgd"; }
  void step(std::span<float> params, std::span<const float> grads) override;
  void set_lr(double lr) noexcept override { options_.lr = static_cast<float>(lr); }
  double lr() const noexcept override { return options_.lr; }
  /// Momentum buffer ("momentum_buffer", all zeros until the first step).
  std::span<const float> velocity() const noexcept { return buffer(0); }
  /// Whether a step has run (the momentum buffer holds history).
  bool started() const noexcept { return steps_ > 0; }
  /// Options in force.
  const SgdOptions& options() const noexcept { return options_; }

 private:
  SgdOptions options_;
};

}  // namespace conflux::model
