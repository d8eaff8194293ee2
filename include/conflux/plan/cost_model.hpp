#pragma once
/// @file cost_model.hpp
/// Predicted time and price of one training configuration from the fitted performance model:
/// FasDL-style K-Reduce over an object store on Lambda-like functions, or MPI allreduce on
/// SLURM. The equations are in docs/planning.md.

#include <cstdint>
#include <string_view>
#include <vector>

#include "conflux/config/config.hpp"
#include "conflux/plan/performance_model.hpp"
#include "conflux/plan/s3_transfer.hpp"
#include "conflux/plan/steps_to_target.hpp"

namespace conflux::plan {

/// Where the job would run.
enum class Target { kLambda, kSlurm };
/// Lambda CPU architecture (selects the GB-second price).
enum class LambdaArch { kX86, kArm };

/// "lambda" or "slurm".
std::string_view to_string(Target target) noexcept;
/// "x86" or "arm".
std::string_view to_string(LambdaArch arch) noexcept;

/// One configuration. Batches are per worker and per iteration.
struct Candidate {
  int workers = 1;               ///< W
  int memory_mb = 128;           ///< M, per worker
  int aggregators = 1;           ///< K (K-Reduce aggregators; K = W on SLURM)
  int aggregator_batch = 32;     ///< Ba
  int nonaggregator_batch = 32;  ///< Bn (= Ba when K = W)
  int data_workers = 0;          ///< D: data-service (preprocessing) ranks; SLURM only
  int threads = 0;   ///< BLAS threads per trainer (cluster.blas_threads); 0: the options' count
  bool gpu = false;  ///< every trainer computes on a GPU of its own (a model of GPU trainers)
  bool operator==(const Candidate&) const = default;
};

/// The model's prediction for one candidate.
struct Prediction {
  double iteration_s = 0;        ///< one iteration: the slower of the two roles
  std::uint64_t iterations = 0;  ///< epochs x ceil(epoch samples / samples per iteration)
  double total_s = 0;            ///< iterations x iteration_s
  double cost_usd = 0;           ///< compute + request + storage
  std::uint64_t samples_per_iteration = 0;  ///< K Ba + (W - K) Bn
  double aggregator_s = 0;                  ///< per iteration, aggregator (every worker on SLURM)
  double nonaggregator_s = 0;               ///< per iteration, non-aggregator (0 when K = W)
  double train_s = 0;                       ///< T_train of the role that sets iteration_s
  double transfer_s = 0;                    ///< T_trans(M)
  double comm_s = 0;            ///< S3 transfers (Lambda) or measured sync (SLURM) of that role
  double offload_ratio = 0;     ///< share of each trainer's batches the data workers build
  double local_s = 0;           ///< T_train with every batch built by the trainer itself
  double data_worker_s = 0;     ///< per iteration, the data workers' time for their batches
  double compute_cost_usd = 0;  ///< GB-seconds (Lambda) or core-hours (SLURM)
  double gpu_cost_usd = 0;      ///< GPU-hours (GPU trainers)
  bool input_bound = false;     ///< GPU trainers: the input, not the GPU, sets the pace
  double request_cost_usd = 0;  ///< Lambda invocations (one per worker per max duration)
  double storage_cost_usd = 0;  ///< object-store PUTs and GETs
  bool operator==(const Prediction&) const = default;
};

/// The discrete search space of the planner; also the range a candidate must lie in.
struct PlanSpace {
  int min_workers = 1;        ///< smallest W
  int max_workers = 64;       ///< largest W
  int min_memory_mb = 128;    ///< smallest M (Lambda's smallest size)
  int max_memory_mb = 10240;  ///< largest M (Lambda's largest size)
  int memory_step_mb = 1;     ///< memory grid: min, min + step, ... <= max
  std::vector<int> batch_sizes = {16, 32, 64, 128, 256, 512, 1024};  ///< per worker
  // Batch rules (FasDL fixes the aggregator batch and caps the global batch at 1024):
  int max_global_batch = 0;  ///< 0: no cap; else K Ba + (W - K) Bn must not exceed it
  int aggregator_batch = 0;  ///< 0: any of batch_sizes; else every Ba is this
  /// 0: any Bn >= Ba of batch_sizes; r >= 1: Bn = r Ba (1: every worker takes the same batch)
  int nonaggregator_batch_ratio = 0;
  /// D in 0..this data-service ranks (SLURM; needs a model that prices the input pipeline)
  int max_data_workers = 0;
  /// BLAS threads per trainer to choose from (each profiled when the model records thread
  /// counts); empty: the options' count only
  std::vector<int> thread_counts{};
};

/// What a CostModel evaluates, and with which prices.
struct CostModelOptions {
  const PerformanceModel* model = nullptr;  ///< required; must outlive the CostModel
  PricesSection prices{};                   ///< [prices] of the config
  Target target = Target::kLambda;          ///< where the job would run
  LambdaArch arch = LambdaArch::kX86;       ///< Lambda only: which GB-second price
  int epochs = 1;                           ///< epochs to train (without to_target)
  /// When set, a candidate trains for the steps its global batch needs to reach the target
  /// (statistical efficiency) instead of `epochs`; must outlive the CostModel.
  const StepsToTarget* to_target = nullptr;
  /// CPU threads a rank's compute runs (cluster.blas_threads): a share beyond that many vCPUs
  /// cannot be used, so T_train stops falling at threads x mb_per_vcpu MB.
  int threads = 1;
  /// Preprocessing threads of a data-service rank (cluster.worker_threads), one core each.
  int worker_threads = 1;
  const S3TransferTable* s3 = nullptr;  ///< required for kLambda; must outlive the CostModel
};

/// Predicts iteration time, total time and price of candidates. Pure and cheap: the planner
/// calls predict() for every point it evaluates.
class CostModel {
 public:
  /// InputError when the options are incomplete or out of range.
  explicit CostModel(CostModelOptions options);
  /// The prediction for `c`; InputError when `c` is not a configuration of the target
  /// (see validate(); this checks everything but the space).
  Prediction predict(const Candidate& c) const;
  /// InputError naming the problem when `c` is impossible for the target or outside `space`.
  void validate(const Candidate& c, const PlanSpace& space) const;
  /// K Ba + (W - K) Bn.
  static std::uint64_t samples_per_iteration(const Candidate& c) noexcept;
  /// epochs x ceil(epoch samples / samples per iteration), or with to_target the steps that
  /// the global batch K Ba + (W - K) Bn needs to reach the target.
  std::uint64_t iterations(const Candidate& c) const noexcept;
  /// Object-store traffic price of one iteration (Lambda; 0 on SLURM).
  double storage_cost_per_iteration(const Candidate& c) const noexcept;
  /// The Lambda price of one GB-second for the chosen architecture.
  double gb_second_price() const noexcept;
  /// The BLAS threads of `c` (its own count, else the options').
  int threads_of(const Candidate& c) const noexcept { return resolved(c.threads); }
  /// The memory beyond which T_train stops falling: threads x mb_per_vcpu (0: the options'
  /// thread count).
  double compute_cap_mb(int threads = 0) const noexcept;
  /// T_train at `batch`, `memory_mb` and `threads` BLAS threads (0: the options' count): that
  /// thread count's fit, with the share capped at compute_cap_mb(threads).
  double train_seconds(double batch, double memory_mb, int threads = 0) const noexcept;
  /// T_c, the compute alone, as train_seconds().
  double compute_seconds(double batch, double memory_mb, int threads = 0) const noexcept;
  /// Seconds D data workers take to build one batch of `batch` for each of `trainers`: x =
  /// W P(B) / (D worker_threads).
  double data_workers_seconds(int trainers, int data_workers, double batch) const noexcept;
  /// How a step of a trainer with batch `batch` at `memory_mb` divides between its own threads
  /// and D data workers (docs/planning.md, "Where preprocessing runs").
  struct Offload {
    double ratio = 0;      ///< r = min(1, T_train / (x + Delta)), the balance point
    double seconds = 0;    ///< max(T_train - r Delta, r x): the step without sync
    double workers_s = 0;  ///< r x
    double local_s = 0;    ///< T_train: every batch built by the trainer
  };
  /// The offload split; Delta = T_train - min(T_c, T_train) is what local building costs.
  Offload offload(int trainers, int data_workers, double batch, double memory_mb,
                  int threads = 0) const noexcept;
  /// The same split at a given ratio (0..1) instead of the balance point.
  Offload offload_at(double ratio, int trainers, int data_workers, double batch, double memory_mb,
                     int threads = 0) const noexcept;
  /// How a GPU trainer's batches are fed (docs/planning.md, "GPU trainers: workers per GPU").
  struct GpuFeed {
    double ceiling = 0;  ///< G: the GPU's samples/s with the data already there, with the sync
    double local = 0;    ///< L: samples/s the trainer's own preprocessing delivers
    double workers = 0;  ///< (D / W) worker_threads B / P(B): its share of the data workers
    double rate = 0;     ///< min(G, L + workers): the trainer's samples/s
    double ratio = 0;    ///< share of its batches the workers build
    bool input_bound = false;  ///< L + workers < G
  };
  /// The feed of each of `trainers` GPU trainers at per-GPU batch `batch` with `data_workers`
  /// shared equally (`memory_mb` only for the sync table); InputError when the model has no
  /// GPU rates at that batch.
  GpuFeed gpu_feed(int trainers, int data_workers, int batch, double memory_mb = 0) const;
  /// vCPUs (SLURM cores) that `memory_mb` buys: ceil(M / mb_per_vcpu).
  int cores(int memory_mb) const noexcept;
  /// The options it was built with.
  const CostModelOptions& options() const noexcept { return options_; }
  /// The performance model.
  const PerformanceModel& model() const noexcept { return *options_.model; }

 private:
  // What a step's split depends on: T_train, what building locally costs (Delta) and the
  // workers' time for one batch of every trainer (x).
  struct StepParts {
    double local, delta, x;
  };
  int resolved(int threads) const noexcept { return threads > 0 ? threads : options_.threads; }
  StepParts step_parts(int trainers, int data_workers, double batch, double memory_mb,
                       int threads) const noexcept;
  // The split of a step of parts `s` at `ratio` (0: no offloading).
  static Offload split_at(const StepParts& s, double ratio) noexcept;
  void check_shape(const Candidate& c) const;
  // predict() for GPU trainers: the feed sets the step, GPU-hours and workers' cores the price.
  Prediction predict_gpu(const Candidate& c) const;
  CostModelOptions options_;
};

}  // namespace conflux::plan
