#pragma once
/// @file sweep_data.hpp
/// Measurements of a `conflux profile` sweep and their TOML file (input of `conflux fit`).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace conflux::plan {

/// One measured grid point: `workers` trainers, each with `memory_mb` and a batch of `batch`.
struct SweepPoint {
  int workers = 1;
  int memory_mb = 0;
  int batch = 0;               ///< per-worker batch
  int threads = 0;             ///< BLAS threads (cluster.blas_threads); 0: not recorded (older)
  int steps = 0;               ///< measured steps (after warm-up)
  double iteration_s = 0;      ///< mean step time without gradient sync (data + compute)
  double compute_s = 0;        ///< of which forward, backward, optimiser
  double sync_s = 0;           ///< mean gradient-sync time per step
  double transfer_s = 0;       ///< mean time to serialise the parameters once
  double cpu_share_used = 0;   ///< CPU seconds per wall second the rank used (throttle check)
  bool out_of_memory = false;  ///< the point could not run under memory_mb
};

/// Time to build one batch on one unthrottled preprocessing thread (what a worker spends).
struct BuildPoint {
  int batch = 0;
  int batches = 0;     ///< built in the measurement
  double seconds = 0;  ///< mean per batch
};

/// A whole sweep.
struct Sweep {
  std::string config_name;          ///< run.name of the profiled config
  std::string dataset;              ///< data.dataset
  std::uint64_t epoch_samples = 0;  ///< training samples per epoch of the config
  double gradient_mb = 0;           ///< parameters in MB (10^6 bytes)
  double mb_per_vcpu = 1769;
  /// "cpu" or "gpu": where the trainers computed (train.device; "cpu" in older profiles). On a
  /// GPU the points are not throttled: compute_s gives the GPU's ceiling, iteration_s the rate
  /// the trainer's own preprocessing feeds it.
  std::string device = "cpu";
  std::vector<SweepPoint> points;
  std::vector<BuildPoint> builds;  ///< per batch size (absent in older profiles)
};

/// Writes `profile` as TOML (atomically).
void write_sweep(const std::filesystem::path& path, const Sweep& profile);
/// Reads a profile; InputError naming the file and key when it is malformed or holds no
/// usable point.
Sweep read_sweep(const std::filesystem::path& path);
/// Merges profiles of the same config (e.g. sweeps at different trainer counts); InputError
/// when they describe different configs.
Sweep merge_sweeps(const std::vector<Sweep>& profiles, const std::vector<std::string>& names);

}  // namespace conflux::plan
