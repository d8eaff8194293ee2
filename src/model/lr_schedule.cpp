#include "conflux/model/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "conflux/core/error.hpp"

namespace conflux::model {

LrSchedule::LrSchedule(Options options) : o_(std::move(options)) {}

LrSchedule LrSchedule::from_config(const TrainSection& train, std::size_t total_steps) {
  Options o{.kind = parse_kind(train.lr_schedule),
            .peak_lr = train.lr,
            .total_steps = total_steps,
            .warmup_steps = static_cast<std::size_t>(train.warmup_steps),
            .step_size = static_cast<std::size_t>(train.lr_step_size),
            .milestones = {},
            .gamma = train.lr_gamma};
  // The config holds the milestones as whole numbers below 2^24, exact in a float.
  for (const float m : train.lr_milestones) o.milestones.push_back(static_cast<std::size_t>(m));
  return LrSchedule(std::move(o));
}

double LrSchedule::at(std::size_t step) const noexcept {
  const std::size_t w = o_.warmup_steps;
  if (step < w) return o_.peak_lr * static_cast<double>(step + 1) / static_cast<double>(w);
  switch (o_.kind) {
    case Kind::kConstant:
      return o_.peak_lr;
    case Kind::kStep:  // StepLR: the decays counted from step 0, as the milestones are
      if (o_.step_size == 0) return o_.peak_lr;
      return o_.peak_lr * std::pow(o_.gamma, static_cast<double>(step / o_.step_size));
    case Kind::kMultiStep: {
      const auto passed = std::upper_bound(o_.milestones.begin(), o_.milestones.end(), step) -
                          o_.milestones.begin();
      return o_.peak_lr * std::pow(o_.gamma, static_cast<double>(passed));
    }
    case Kind::kCosine:
      break;
  }
  if (o_.total_steps <= w + 1) return o_.peak_lr;
  // The last step (total_steps - 1) gets lr 0: the run ends fully annealed.
  const double progress =
      std::min(1.0, static_cast<double>(step - w) / static_cast<double>(o_.total_steps - w - 1));
  return 0.5 * o_.peak_lr * (1.0 + std::cos(std::numbers::pi * progress));
}

LrSchedule::Kind LrSchedule::parse_kind(const std::string& name) {
  if (name == "constant") return Kind::kConstant;
  if (name == "cosine") return Kind::kCosine;
  if (name == "step") return Kind::kStep;
  if (name == "multistep") return Kind::kMultiStep;
  CONFLUX_INPUT_ERROR("unknown learning-rate schedule '{}' (constant, cosine, step or multistep)",
                      name);
}

}  // namespace conflux::model
