#pragma once
/// @file sgd.hpp
/// SGD with momentum, Nesterov momentum and (coupled, L2) weight decay, with PyTorch's
/// semantics (torch.optim.SGD, dampening 0).

#include <span>
#include <string_view>
#include <vector>

#include "conflux/core/host_device.hpp"
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

/// One element of Sgd::step, operation by operation as torch.optim.SGD (dampening 0, no decay
/// term when wd == 0, no buffer when momentum == 0): the update every device applies.
struct SgdElement {
  float lr = 0.0f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  bool first = false;  ///< no step has run: the buffer starts as d
  CONFLUX_HD void operator()(float& w, float g, float& v) const {
    const float d = weight_decay != 0.0f ? g + weight_decay * w : g;
    if (momentum == 0.0f) {
      w -= lr * d;
      return;
    }
    v = first ? d : momentum * v + d;
    w -= nesterov ? lr * (d + momentum * v) : lr * v;
  }
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
  /// The element update of the next step().
  SgdElement next_update() const noexcept {
    return {options_.lr, options_.momentum, options_.weight_decay, options_.nesterov, steps_ == 0};
  }

 private:
  SgdOptions options_;
};

}  // namespace conflux::model
