#pragma once
/// @file sweep.hpp
/// `conflux profile`: short training runs of one config over a grid of trainer counts W,
/// Lambda-like memory sizes M (CPU throttled to M / mb_per_vcpu, memory capped) and
/// per-worker batch sizes B, measuring per-iteration compute, gradient-sync and parameter
/// serialisation times for the fit, and the time to build a batch on one preprocessing thread
/// (what a data-service worker spends per batch).

#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/plan/sweep_data.hpp"

namespace conflux::plan {

/// The grid and how long to measure each point.
struct SweepOptions {
  const Config* config = nullptr;             ///< the config to profile
  const comm::Communicator* world = nullptr;  ///< every rank takes part
  const Logger* log = nullptr;
  std::vector<int> worker_counts;  ///< trainer counts, each ≤ world size
  std::vector<int> memory_mb;      ///< function sizes
  std::vector<int> batch_sizes;    ///< per-worker batches
  std::vector<int> thread_counts;  ///< BLAS threads per trainer; empty: cluster.blas_threads
  int warmup_steps = 5;            ///< steps run before measuring (pipeline fill, caches)
  int steps = 20;                  ///< measured steps per point, at least
  double min_seconds = 1.0;        ///< measure at least this long per point (many periods)
  double transfer_seconds = 0.2;   ///< how long to repeat the parameter serialisation
  double build_seconds = 0.3;      ///< how long to time batch builds, per batch size
};

/// Runs the sweep on every rank of `world` (a collective); the result is complete on rank 0.
/// InputError for an empty or out-of-range grid.
Sweep run_sweep(const SweepOptions& options);

}  // namespace conflux::plan
