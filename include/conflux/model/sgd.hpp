#pragma once
/// @file sgd.hpp
/// SGD with momentum and (coupled, L2) weight decay, with PyTorch's semantics.

#include <span>
#include <vector>

namespace conflux::model {

/// SGD hyper-parameters.
struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

/// g' = g + wd * w;  v = momentum * v + g' (v = g' on the first step);  w -= lr * v.
class Sgd {
 public:
  /// Optimiser for a parameter buffer of `num_params` floats.
  Sgd(SgdOptions options, std::size_t num_params);
  /// Applies one update in place.
  void step(std::span<float> params, std::span<const float> grads);
  /// Changes the learning rate (for schedules).
  void set_lr(float lr) noexcept { options_.lr = lr; }
  /// Momentum buffer (for checkpoints).
  std::span<const float> velocity() const noexcept { return velocity_; }
  /// Whether a step has run (the momentum buffer holds history), for checkpoints.
  bool started() const noexcept { return !first_step_; }
  /// Restores the state saved from velocity() and started(); RuntimeError on a size mismatch.
  void restore(std::span<const float> velocity, bool started);
  /// Options in force.
  const SgdOptions& options() const noexcept { return options_; }

 private:
  SgdOptions options_;
  std::vector<float> velocity_;
  bool first_step_ = true;
};

}  // namespace conflux::model
