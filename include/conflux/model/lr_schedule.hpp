#pragma once
/// @file lr_schedule.hpp
/// Learning-rate schedules over the global step count (PyTorch's StepLR, MultiStepLR and
/// cosine annealing, stepped once per step, after an optional linear warm-up).

#include <cstddef>
#include <string>
#include <vector>

#include "conflux/config/sections.hpp"

namespace conflux::model {

/// Constant, step, multi-step or cosine-annealed learning rate after a linear warm-up.
class LrSchedule {
 public:
  /// Shape of the schedule after warm-up.
  enum class Kind { kConstant, kCosine, kStep, kMultiStep };
  /// What a schedule is made of. Steps are 0-based global steps counted from the run's start.
  struct Options {
    Kind kind = Kind::kConstant;
    double peak_lr = 0.01;                ///< reached after warm-up
    std::size_t total_steps = 0;          ///< cosine: the run's last step has lr 0
    std::size_t warmup_steps = 0;         ///< steps 0..W-1 ramp linearly to peak_lr
    std::size_t step_size = 0;            ///< kStep: times gamma at every multiple of it
    std::vector<std::size_t> milestones;  ///< kMultiStep: times gamma at each, increasing
    double gamma = 0.1;                   ///< decay factor of kStep and kMultiStep
  };
  /// A schedule; the options are assumed checked (the config's cross-key rules).
  explicit LrSchedule(Options options);
  /// The schedule [train] describes, for a run of `total_steps` steps.
  static LrSchedule from_config(const TrainSection& train, std::size_t total_steps);
  /// Learning rate for 0-based global step `step`.
  double at(std::size_t step) const noexcept;
  /// Parses "constant", "cosine", "step" or "multistep"; InputError otherwise.
  static Kind parse_kind(const std::string& name);

 private:
  Options o_;
};

}  // namespace conflux::model
