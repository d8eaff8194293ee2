#pragma once
/// @file steps_to_target.hpp
/// Statistical efficiency for the planner: how many steps a global batch B needs to reach a
/// target, from the empirical model of McCandlish et al. (2018), S(B) = S_min (1 + B_noise / B),
/// fitted to one reference run that measured its gradient noise scale (train.noise_scale).

#include <cstdint>
#include <filesystem>
#include <string>

namespace conflux::plan {

/// What training must reach.
struct TrainingTarget {
  enum class Kind { kTestAccuracy, kTrainingLoss };
  Kind kind = Kind::kTestAccuracy;
  double value = 0;  ///< accuracy in (0, 1], or a loss > 0
  /// "test accuracy >= 0.975" or "training loss <= 0.15".
  std::string describe() const;
};

/// Steps to a target as a function of the global batch.
struct StepsToTarget {
  TrainingTarget target{};
  double s_min = 0;            ///< steps an infinitely small-noise (large) batch would need
  double b_noise = 0;          ///< the gradient noise scale at the target
  double reference_batch = 0;  ///< the reference run's global batch
  double reference_steps = 0;  ///< ... and its steps to the target
  std::string source{};        ///< the reference run directory
  /// S(B) = S_min (1 + B_noise / B), rounded up to whole steps; B > 0.
  std::uint64_t steps(double global_batch) const noexcept;
};

/// Whole epochs of `epoch_samples` that cover `steps` steps of `global_batch` (an epoch's last
/// step may be a partial batch, so steps per epoch = ceil(epoch_samples / global_batch)); at
/// least 1. For the emitted config's train.epochs.
std::int64_t epochs_covering(std::uint64_t steps, std::uint64_t epoch_samples,
                             std::uint64_t global_batch) noexcept;

/// Reads a reference run (a `conflux train` run directory with train.noise_scale = true on 2 or
/// more trainers): its global batch (config.toml), the first step that reached the target
/// (test accuracy: the end of the first epoch whose metrics.jsonl test_accuracy reaches it;
/// training loss: the first steps.jsonl report whose window mean loss is at or below it) and
/// B_noise of that epoch; S_min = steps / (1 + B_noise / batch). InputError (exit 2) naming the
/// file when it is missing or malformed, holds no noise-scale data, or never reached the target
/// (with the best value it reached).
StepsToTarget steps_to_target_from_run(const std::filesystem::path& run_dir,
                                       const TrainingTarget& target);

}  // namespace conflux::plan
