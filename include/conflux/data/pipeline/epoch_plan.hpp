#pragma once
/// @file epoch_plan.hpp
/// The deterministic epoch plan (docs/design.md invariant 1): the sample order of an epoch is
/// a pure function of (seed, epoch, dataset size). Step s of the epoch covers plan positions
/// [s*B, min((s+1)*B, N)) of the global batch size B; its samples are split into T contiguous
/// per-trainer batches in trainer order (BatchSplit), batch index i = s*T + t going to trainer
/// t = i mod T. The last step may be short; no sample is dropped, so every sample is used
/// exactly once per epoch.

#include <cstdint>
#include <span>
#include <vector>

namespace conflux::data {

/// Plan positions [begin, end) of one trainer batch.
struct BatchRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  /// Number of samples.
  std::size_t size() const noexcept { return end - begin; }
};

/// How every step's samples are divided among the trainers: the one place that computes the
/// per-trainer batches. Equal batches: the first (n mod T) trainers get one sample more.
/// Unequal batches (K-Reduce): trainers K..T-1 (non-aggregators) take `nonaggregator_batch`
/// samples of a full step each and trainers 0..K-1 (aggregators) share the rest as equal
/// batches are shared; a short last step is divided in proportion to the full-step batches.
class BatchSplit {
 public:
  /// `global_batch` samples per step over `trainers`; `aggregators` K (0: every trainer) and
  /// `nonaggregator_batch` Bn (0: equal batches) as comm.aggregators and
  /// comm.nonaggregator_batch_size. RuntimeError when the K aggregators would get fewer than K
  /// samples of a full step.
  BatchSplit(std::size_t global_batch, int trainers, int aggregators = 0,
             std::size_t nonaggregator_batch = 0);
  /// Samples of a full step (train.batch_size).
  std::size_t global_batch() const noexcept { return global_batch_; }
  /// Number of trainers.
  int trainers() const noexcept { return trainers_; }
  /// True when every step is split into equal batches (Bn unset, or equal to what equal
  /// batches would give the non-aggregators anyway).
  bool equal() const noexcept { return nonaggregator_batch_ == 0; }
  /// Trainer t's batch in a full step.
  std::size_t full_batch(int trainer) const noexcept;
  /// Largest batch trainer t gets in any step (a short step never gives it more than a full one).
  std::size_t max_batch(int trainer) const noexcept { return full_batch(trainer); }
  /// Offsets [begin, end) within a step of `step_samples` (<= global batch) samples of trainer
  /// t's batch; consecutive trainers' ranges are adjacent and together cover the step.
  BatchRange within_step(std::size_t step_samples, int trainer) const noexcept;

 private:
  std::size_t global_batch_;
  int trainers_;
  int aggregators_;
  std::size_t nonaggregator_batch_;  // 0: equal batches
};

/// Order and batching of one epoch.
class EpochPlan {
 public:
  /// Plan for `dataset_size` samples, `global_batch` samples per step in equal batches over
  /// `trainers`.
  EpochPlan(std::uint64_t seed, std::uint32_t epoch, std::size_t dataset_size,
            std::size_t global_batch, int trainers);
  /// Plan for `dataset_size` samples, each step divided as `split` says.
  EpochPlan(std::uint64_t seed, std::uint32_t epoch, std::size_t dataset_size,
            const BatchSplit& split);
  /// Steps in the epoch (ceil(N / B)).
  std::size_t steps() const noexcept { return steps_; }
  /// Samples of step s over all trainers (B, or fewer in the last step).
  std::size_t step_samples(std::size_t step) const noexcept;
  /// Positions of the whole step s (all trainers).
  BatchRange step_range(std::size_t step) const noexcept;
  /// Positions of trainer t's batch in step s.
  BatchRange range(std::size_t step, int trainer) const noexcept;
  /// Dataset indices of trainer t's batch in step s.
  std::span<const std::uint32_t> samples(std::size_t step, int trainer) const noexcept;
  /// Dataset indices at plan positions `range` (which must lie within the epoch).
  std::span<const std::uint32_t> samples(BatchRange range) const noexcept;
  /// The whole permutation of dataset indices.
  std::span<const std::uint32_t> order() const noexcept { return order_; }
  /// How steps are divided among the trainers.
  const BatchSplit& split() const noexcept { return split_; }

 private:
  std::vector<std::uint32_t> order_;
  BatchSplit split_;
  std::size_t steps_;
};

}  // namespace conflux::data
