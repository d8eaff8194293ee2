#pragma once
/// @file lr_schedule.hpp
/// Learning-rate schedules over the global step count.

#include <cstddef>
#include <string>

namespace conflux::model {

/// Constant or cosine-annealed learning rate with an optional linear warm-up.
class LrSchedule {
 public:
  /// Shape of the schedule after warm-up.
  enum class Kind { kConstant, kCosine };
  /// `peak_lr` is reached after `warmup_steps`; cosine decays it to 0 at `total_steps`.
  LrSchedule(Kind kind, double peak_lr, std::size_t total_steps, std::size_t warmup_steps);
  /// Learning rate for 0-based global step `step`.
  double at(std::size_t step) const noexcept;
  /// Parses "constant" or "cosine"; InputError otherwise.
  static Kind parse_kind(const std::string& name);

 private:
  Kind kind_;
  double peak_lr_;
  std::size_t total_steps_;
  std::size_t warmup_steps_;
};

}  // namespace conflux::model
