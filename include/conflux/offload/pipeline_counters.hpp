#pragma once
/// @file pipeline_counters.hpp
/// The cumulative counters of a trainer's input pipeline that the offload measurements are
/// taken from (the window meter turns their differences into rates).

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

}  // namespace conflux::offload
