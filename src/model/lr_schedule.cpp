#include "conflux/model/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "conflux/core/error.hpp"

namespace conflux::model {

LrSchedule::LrSchedule(Kind kind, double peak_lr, std::size_t total_steps, std::size_t warmup_steps)
    : kind_(kind), peak_lr_(peak_lr), total_steps_(total_steps), warmup_steps_(warmup_steps) {}

double LrSchedule::at(std::size_t step) const noexcept {
  if (step < warmup_steps_) {
    return peak_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  }
  if (kind_ == Kind::kConstant || total_steps_ <= warmup_steps_ + 1) return peak_lr_;
  // The last step (total_steps - 1) gets lr 0: the run ends fully annealed.
  const double progress = std::min(1.0, static_cast<double>(step - warmup_steps_) /
                                            static_cast<double>(total_steps_ - warmup_steps_ - 1));
  return 0.5 * peak_lr_ * (1.0 + std::cos(std::numbers::pi * progress));
}

LrSchedule::Kind LrSchedule::parse_kind(const std::string& name) {
  if (name == "constant") return Kind::kConstant;
  if (name == "cosine") return Kind::kCosine;
  CONFLUX_INPUT_ERROR("unknown learning-rate schedule '{}' (constant or cosine)", name);
}

}  // namespace conflux::model
