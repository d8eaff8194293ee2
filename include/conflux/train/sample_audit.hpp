#pragma once
/// @file sample_audit.hpp
/// Audit mode (data.audit): records which samples each trainer consumed, and at the end of
/// every epoch checks over all trainers that each sample of the dataset was used exactly once
/// (docs/design.md invariant 3), whichever rank or thread built its batch.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/data/pipeline/batch.hpp"

namespace conflux::train {

/// Result of one epoch's audit (global over trainers).
struct AuditResult {
  std::size_t samples = 0;  ///< dataset samples checked
  std::size_t batches = 0;  ///< batches consumed by all trainers
  std::size_t skipped = 0;  ///< of the samples, those skipped as corrupt (data.on_corrupt)
};

/// Records one trainer's consumed batches and checks each epoch.
class SampleAudit {
 public:
  /// Audit of a dataset of `dataset_size` samples; writes one CSV line per batch to
  /// `csv_file` (epoch, step, origin, worker, sample indices, a skipped one suffixed "s"); a
  /// resumed run appends to it. A skipped sample counts as its one use.
  SampleAudit(std::size_t dataset_size, const std::filesystem::path& csv_file, bool resumed);
  /// This trainer's uses of each sample in the epoch so far (saved in checkpoints).
  std::span<const double> counts() const noexcept { return counts_; }
  /// Adds uses restored from a checkpoint; RuntimeError when the dataset size differs.
  void add_counts(std::span<const double> counts);
  /// Forgets the epoch's records without checking them (an epoch begun without the audit).
  void discard_epoch();
  /// Records a consumed batch.
  void record(const data::Batch& batch);
  /// Collective over `trainers`: RuntimeError naming the first sample not used exactly once
  /// in `epoch` (and how often it was used).
  AuditResult check_epoch(int epoch, const comm::Communicator& trainers,
                          std::chrono::duration<double> timeout);

 private:
  std::vector<double> counts_;  // uses of each sample this epoch (double: summed by allreduce)
  std::size_t batches_ = 0;
  std::size_t skipped_ = 0;  // samples of this epoch's batches skipped as corrupt
  std::ofstream csv_;
  std::filesystem::path csv_path_;
};

}  // namespace conflux::train
