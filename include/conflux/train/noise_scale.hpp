#pragma once
/// @file noise_scale.hpp
/// The gradient noise scale of McCandlish et al. (2018), "An Empirical Model of Large-Batch
/// Training", appendix A: estimated from what data-parallel trainers hold anyway, each
/// trainer's mean gradient over its b samples and the merged mean over B = W b.

#include <chrono>
#include <cstddef>

#include "conflux/comm/communicator.hpp"

namespace conflux::train {

/// One step's squared gradient norms.
struct NoiseStep {
  double small_norm2 = 0;  ///< mean over the trainers of |mean gradient over b samples|^2
  double big_norm2 = 0;    ///< |merged mean gradient over B samples|^2
  double small_batch = 0;  ///< b: samples per trainer (equal on every trainer)
  double big_batch = 0;    ///< B = W b
};

/// Running estimate over steps. With E|G_b|^2 = |G|^2 + tr(Sigma) / b, two batch sizes give
/// the unbiased estimates
///
///     |G|^2     ~ (B |G_B|^2 - b |G_b|^2) / (B - b)
///     tr(Sigma) ~ (|G_b|^2 - |G_B|^2) / (1/b - 1/B)
///
/// Each is noisy per step (the first can be negative), so both are averaged over the steps
/// before the ratio is taken, as the paper recommends: B_noise = mean tr(Sigma) / mean |G|^2.
class NoiseScaleEstimator {
 public:
  /// Adds a step; ignored unless 0 < small_batch < big_batch and both norms are finite.
  void add(const NoiseStep& step) noexcept;
  /// Steps added since the last reset().
  std::size_t steps() const noexcept { return steps_; }
  /// Mean of the per-step |G|^2 estimates; NaN without steps.
  double gradient_norm2() const noexcept;
  /// Mean of the per-step tr(Sigma) estimates; NaN without steps.
  double trace() const noexcept;
  /// B_noise = trace() / gradient_norm2(); NaN without steps or when either is not positive
  /// (too few or too noisy steps to tell).
  double noise_scale() const noexcept;
  /// Starts a new estimate (e.g. per epoch).
  void reset() noexcept { *this = NoiseScaleEstimator{}; }

 private:
  std::size_t steps_ = 0;
  double norm2_sum_ = 0;
  double trace_sum_ = 0;
};

/// The trainers' side (train.noise_scale): each step, one allreduce of four numbers over the
/// trainers turns their squared gradient sums into a NoiseStep for the epoch's estimate.
class NoiseScaleMeter {
 public:
  NoiseScaleMeter(const comm::Communicator& trainers, std::chrono::duration<double> timeout)
      : trainers_(trainers), timeout_(timeout) {}
  /// Collective over the trainers, after every step's exchange. `local_sq`: this trainer's
  /// gradient sum of squares before the exchange, as trainers compute it (scaled by
  /// 1 / step_samples, so that the merged sum is the global mean); `samples`: its batch;
  /// `merged_sq`: the merged gradient's sum of squares when the exchange merged this step's
  /// gradients (`current`). A step counts when every trainer merged it with equal batches.
  void record(double local_sq, std::size_t samples, std::size_t step_samples, bool current,
              double merged_sq);
  /// The estimate since start_epoch().
  const NoiseScaleEstimator& epoch() const noexcept { return epoch_; }
  void start_epoch() noexcept { epoch_.reset(); }

 private:
  const comm::Communicator& trainers_;
  std::chrono::duration<double> timeout_;
  NoiseScaleEstimator epoch_;
};

}  // namespace conflux::train
