#pragma once
/// @file epoch_plan.hpp
/// The deterministic epoch plan (ARCHITECTURE.md invariant 1): the sample order of an epoch is
/// a pure function of (seed, epoch, dataset size). Step s of the epoch covers plan positions
/// [s*B, min((s+1)*B, N)) of the global batch size B; its samples are split into T contiguous
/// per-trainer batches, batch index i = s*T + t going to trainer t = i mod T. The last step
/// may be short; no sample is dropped, so every sample is used exactly once per epoch.

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

/// Order and batching of one epoch.
class EpochPlan {
 public:
  /// Plan for `dataset_size` samples, `global_batch` samples per step over `trainers`.
  EpochPlan(std::uint64_t seed, std::uint32_t epoch, std::size_t dataset_size,
            std::size_t global_batch, int trainers);
  /// Steps in the epoch (ceil(N / B)).
  std::size_t steps() const noexcept { return steps_; }
  /// Samples of step s over all trainers (B, or fewer in the last step).
  std::size_t step_samples(std::size_t step) const noexcept;
  /// Positions of trainer t's batch in step s.
  BatchRange range(std::size_t step, int trainer) const noexcept;
  /// Dataset indices of trainer t's batch in step s.
  std::span<const std::uint32_t> samples(std::size_t step, int trainer) const noexcept;
  /// The whole permutation of dataset indices.
  std::span<const std::uint32_t> order() const noexcept { return order_; }
  /// Epoch-wide batch index of trainer t's batch in step s (s*T + t).
  std::size_t batch_index(std::size_t step, int trainer) const noexcept {
    return step * static_cast<std::size_t>(trainers_) + static_cast<std::size_t>(trainer);
  }

 private:
  std::vector<std::uint32_t> order_;
  std::size_t global_batch_;
  int trainers_;
  std::size_t steps_;
};

}  // namespace conflux::data
