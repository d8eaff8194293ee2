#pragma once
/// @file performance_model.hpp
/// The fitted performance model of one training config: what `conflux fit` produces from
/// `conflux profile` measurements and what the cost model and planner evaluate.

#include <cstdint>
#include <string>
#include <vector>

namespace conflux::plan {

/// Per-iteration compute time T_train(B, M) = a (B + b) / (M + m) + c, in seconds, for a
/// batch of B samples on one worker with M MB (CPU share M / mb_per_vcpu). FasDL's form has
/// c = 0; c > 0 is the alternative with a fixed per-iteration cost that does not scale with CPU.
struct TrainTimeModel {
  double a = 0;  ///< seconds x MB per sample
  double b = 0;  ///< samples of fixed work per iteration
  double m = 0;  ///< MB offset
  double c = 0;  ///< seconds per iteration independent of B and M
  /// T_train at batch `batch` and memory `memory_mb`.
  double seconds(double batch, double memory_mb) const {
    return a * (batch + b) / (memory_mb + m) + c;
  }
};

/// Per-iteration parameter transfer / serialisation time T_trans(M) = k1 M^k2, in seconds.
struct TransferTimeModel {
  double k1 = 0;
  double k2 = 0;
  /// T_trans at memory `memory_mb`.
  double seconds(double memory_mb) const;
};

/// Measured gradient-synchronisation time per iteration (MPI target): for each measured
/// trainer count, points (memory MB, seconds) sorted by memory; evaluated by linear
/// interpolation in memory, clamped to the end points outside the measured range.
struct SyncTimeTable {
  struct Row {
    int workers = 1;
    std::vector<double> memory_mb;  ///< ascending
    std::vector<double> seconds;    ///< same length
  };
  std::vector<Row> rows;  ///< ascending in workers; 1 worker means no sync (0 s)
  /// Sync time for `workers` trainers at `memory_mb`; InputError when `workers` was not
  /// measured (the model does not extrapolate over the trainer count).
  double seconds(int workers, double memory_mb) const;
  /// Largest measured trainer count (1 when nothing was measured).
  int max_workers() const;
};

/// Time to build one batch of B samples on one unthrottled preprocessing thread (read, decode,
/// augment), P(B) = p0 + p1 B seconds: what a data-service worker spends per batch it serves.
struct InputCostModel {
  double p0 = 0;  ///< seconds per batch independent of B
  double p1 = 0;  ///< seconds per sample
  /// P(B).
  double seconds(double batch) const { return p0 + p1 * batch; }
};

/// A GPU trainer at one per-GPU batch: what it measured with its input built locally.
struct GpuRate {
  int batch = 0;                 ///< per-GPU batch
  double ceiling_samples_s = 0;  ///< compute ceiling: samples/s with the data already there
  double local_samples_s = 0;    ///< samples/s the trainer's own preprocessing delivers
};

/// GPU trainers (train.device = gpu): their compute ceiling and local input rate per batch.
/// Present only in models of GPU trainers; the planner then prices GPU-hours and chooses the
/// data workers per GPU instead of a CPU share (docs/planning.md, "GPU trainers").
struct GpuTrainerModel {
  std::vector<GpuRate> rates;  ///< ascending in batch, one per profiled batch
  /// Whether the model describes GPU trainers.
  bool present() const { return !rates.empty(); }
  /// The rates at `batch`; nullptr when that batch was not profiled.
  const GpuRate* at(int batch) const;
};

/// T_train and T_c fitted on the points profiled with one more BLAS thread count.
struct ThreadCountFit {
  int threads = 1;           ///< cluster.blas_threads of its points
  TrainTimeModel train{};    ///< T_train at this thread count
  TrainTimeModel compute{};  ///< T_c at this thread count (a = 0: not fitted)
};

/// Everything the cost model needs about one training config.
struct PerformanceModel {
  TrainTimeModel train;  ///< T_train at train_threads BLAS threads
  /// BLAS threads `train` was profiled with; 0 in models of older profiles (not recorded: the
  /// planner then caps the CPU share at the config's thread count).
  int train_threads = 0;
  /// Fits at further profiled thread counts (ascending, all above train_threads).
  std::vector<ThreadCountFit> more_threads;
  TransferTimeModel transfer;
  SyncTimeTable sync;
  /// T_c(B, M): the step's compute alone (forward, backward, optimiser), fitted like T_train
  /// on the profile's compute times; T_train - T_c is what building batches locally costs the
  /// trainer. Absent (a = 0) in models of profiles without input measurements.
  TrainTimeModel compute;
  InputCostModel input;  ///< P(B); absent (p1 = 0) as `compute`
  /// GPU trainers' rates; empty for CPU trainers (then T_train and T_c describe them).
  GpuTrainerModel gpu;
  /// Whether the model can price data-service workers: P(B) was measured, and what offloading
  /// saves the trainer (T_c on a CPU trainer, the local input rate on a GPU trainer).
  bool prices_input() const { return input.p1 > 0 && (compute.a > 0 || gpu.present()); }
  /// The profiled thread counts, ascending (empty when not recorded).
  std::vector<int> measured_threads() const;
  /// T_train at `threads` BLAS threads: that count's fit when profiled, else `train`.
  const TrainTimeModel& train_at(int threads) const;
  /// T_c at `threads`, as train_at().
  const TrainTimeModel& compute_at(int threads) const;
  double gradient_mb = 0;           ///< flattened gradient (= parameters) in MB (10^6 bytes)
  std::uint64_t epoch_samples = 0;  ///< training samples per epoch
  double mb_per_vcpu = 1769;        ///< memory that buys one vCPU
  std::string dataset;              ///< for reports
  std::string source;               ///< profile file(s) it was fitted from
  /// Leave-one-out relative errors (predicted - measured) / measured of T_train's points: how
  /// far a prediction strays on a point the fit has not seen (the planner's margin).
  std::vector<double> train_loo_errors;
};

}  // namespace conflux::plan
