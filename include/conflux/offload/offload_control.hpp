#pragma once
/// @file offload_control.hpp
/// The knob a controller turns while training runs (the share of batches built by workers),
/// and the pipeline counters it reads to decide.

#include <cstdint>
#include <vector>

namespace conflux::offload {

/// One worker as seen by one trainer (cumulative counters plus the latest report).
struct WorkerCounters {
  bool live = true;                ///< not in a back-off period after a missed deadline
  std::uint64_t answers = 0;       ///< answers used by this trainer
  std::uint64_t timeouts = 0;      ///< requests given up on
  double last_build_seconds = 0;   ///< service time of its latest answer (0: none yet)
  double total_build_seconds = 0;  ///< service times of all its answers, summed
  double last_busy_fraction = 0;   ///< its recent busy share, from its latest answer
  std::uint32_t last_queued = 0;   ///< requests waiting at it when its latest answer left
  std::uint32_t in_flight = 0;     ///< this trainer's requests outstanding at it now
};

/// Cumulative counters of one trainer's input pipeline.
struct PipelineCounters {
  std::uint64_t local_built = 0;   ///< batches built by the trainer's own threads
  double local_build_seconds = 0;  ///< wall time those builds took
  std::uint64_t delivered = 0;     ///< batches handed to the training loop
  double wait_local_seconds = 0;   ///< next() waited for a batch built locally
  double wait_remote_seconds = 0;  ///< next() waited for a batch from a worker
  int trainers = 1;                ///< trainers sharing the workers
  std::vector<WorkerCounters> workers;
};

/// Reads and changes a trainer's offload ratio between steps.
class OffloadControl {
 public:
  virtual ~OffloadControl() = default;
  /// Fraction of batches requested from worker ranks, in [0, 1].
  virtual double offload_ratio() const = 0;
  /// Sets the fraction for batches scheduled from now on (clamped to [0, 1]).
  virtual void set_offload_ratio(double ratio) = 0;
  /// The pipeline's counters so far.
  virtual PipelineCounters pipeline_counters() const = 0;
};

}  // namespace conflux::offload
