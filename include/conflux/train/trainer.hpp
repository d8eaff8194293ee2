#pragma once
/// @file trainer.hpp
/// Data-parallel training on the trainer ranks: deterministic epoch plan, local
/// preprocessing, forward/backward, gradient sum over trainers (comm.strategy: MPI allreduce
/// or K-Reduce; NCCL on GPUs), SGD, evaluation, on the CPU or a GPU (compute_backend.hpp).

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/comm/gradient_sync.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/elapsed.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/io/sample_source.hpp"
#include "conflux/data/service/batch_loader.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/lr_schedule.hpp"
#include "conflux/model/model.hpp"
#include "conflux/offload/remote_schedule.hpp"
#include "conflux/offload/step_times.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/callbacks.hpp"
#include "conflux/train/compute_backend.hpp"
#include "conflux/train/device_choice.hpp"
#include "conflux/train/evaluation.hpp"
#include "conflux/train/noise_scale.hpp"
#include "conflux/train/sample_audit.hpp"

namespace conflux::train {

/// Where the data service's worker ranks are.
struct DataServiceLink {
  const comm::Communicator* comm = nullptr;  ///< the service communicator; null: no workers
  std::vector<int> worker_ranks;             ///< rank in *comm of each worker
};

/// What a trainer needs besides the config.
struct TrainerSetup {
  const Config& config;
  const comm::Communicator& trainers;  ///< the trainer ranks (this rank is trainers.rank())
  const data::SourceSplits& data;
  DataServiceLink service = {};  ///< worker ranks to offload preprocessing to
  const Logger* log = nullptr;   ///< for warnings and data-service summaries; null: silent
  telemetry::Timeline* timeline = nullptr;  ///< records each step's phases; null: none
  DeviceChoice device = {};                 ///< from choose_device(); default: the CPU
};

/// Runs training on one trainer rank; all trainer ranks run it together.
class Trainer {
 public:
  /// Builds the model and transforms on setup.device; InputError when the model or transforms
  /// do not fit the dataset (naming the config key and where it was set).
  explicit Trainer(const TrainerSetup& setup);
  ~Trainer();
  /// Continues from a checkpoint (call before run()). InputError naming the file when the
  /// checkpoint holds a model of another shape or was made on another dataset size.
  void restore(const ckpt::TrainingState& state, const std::string& source);
  /// Trains until train.epochs are done or a callback stops it; returns the summary.
  TrainSummary run(std::span<TrainingCallback* const> callbacks);
  /// The model on the host (final weights after run(), also on the GPU).
  const model::Model& model() const noexcept { return backend_->host_model(); }
  /// "CPU" or the GPU the trainer computes on.
  std::string device_name() const { return backend_->device_name(); }

 private:
  class Context;
  using Clock = SteadyClock;
  using Callbacks = std::span<TrainingCallback* const>;
  // Sums of loss, correct predictions and samples.
  struct Tally {
    double loss = 0, correct = 0, samples = 0;
  };
  // Where training stands: the next step to run.
  struct Position {
    std::uint32_t epoch = 0;
    std::size_t step = 0;
    std::size_t global_step = 0;
  };
  // What a checkpoint saves of the run's progress: restore() sets it, capture() reads it.
  struct Progress {
    Position position;
    Tally epoch_tally;                  // global, reported steps of the epoch so far
    double epoch_seconds_before = 0;    // this epoch's training time in earlier launches
    double elapsed_seconds_before = 0;  // the run's training time in earlier launches
    std::vector<std::string> metrics;   // metrics lines of the finished epochs
    // This trainer's offload ratio and credit: the loader's schedule, set by the ratio
    // controller, saved per trainer (docs/design.md, "Profiling and the offload controller").
    offload::RemoteSchedule offload;
    bool resumed = false;  // restored from a checkpoint
  };
  // The step in flight: where its time went, and the next batch when it is staged ahead.
  struct StepInFlight {
    offload::StepTimes times;           // of the step just finished
    data::Batch* prefetched = nullptr;  // fetched and staged during this step
    double prefetch_wait = 0;           // the time that fetch waited
    double callbacks_seconds = 0;       // the previous step's callbacks
  };
  // What the reports measure from: their clocks, and this trainer's steps since the last report.
  struct Reporting {
    Clock::time_point train_start, epoch_start, window_start;
    Tally window;                  // this trainer's steps since the last fold
    Tally reported;                // the epoch's tally at the last report
    double data_wait_sum = 0;      // all trainers' batch waits since the last report, s
    double trainer_steps = 0;      // ... over this many trainer steps
    double window_data_wait = 0;   // this trainer's batch waits since the last report, s
    std::size_t window_steps = 0;  // this trainer's steps since the last report
    std::size_t first_step = 0;    // the global step this launch began at (for the ETA)
    std::size_t total_steps = 0;   // of the whole run
  };
  // data.audit: the exactly-once audit and what the checkpoint said of it.
  struct AuditState {
    std::optional<SampleAudit> audit;
    std::vector<double> restored_counts;  // sums over the trainers, restored on trainer 0
    std::int64_t unaudited_epoch = -1;    // resumed mid-epoch from a checkpoint without counts
  };

  // run()'s steps.
  std::size_t start_input();
  void log_gradient_sync() const;
  void begin_callbacks(Callbacks callbacks);
  data::LoaderStats train_epoch(Context& context, Callbacks callbacks);
  Clock::time_point train_step();
  void report_steps(std::size_t step, Callbacks callbacks);
  TrainSummary end_run(const Context& context, Callbacks callbacks, TrainSummary summary);
  EpochReport finish_epoch(const data::LoaderStats& stats_before);
  bool audit_epoch(int epoch);
  void add_noise_scale(EpochReport& report);

  void check_restorable(const ckpt::TrainingState& state, const std::string& source) const;
  EvalResult evaluate();
  void check_replicas_agree(const std::string& digest) const;
  std::unique_ptr<data::BatchLoader> make_loader();
  data::BatchSplit batch_split() const;
  void apply_merged(std::size_t global_step);
  void drain_sync();
  void report_data_service(const data::LoaderStats& stats) const;
  void fold_window();
  void record_step_phases(Clock::time_point start, Clock::time_point data,
                          Clock::time_point backward, Clock::time_point sync, Clock::time_point end,
                          double next_batch_wait);
  // With a backend that stages ahead (the GPU) and `epoch_goes_on`: fetches the next batch and
  // stages it while the device computes; returns the time the fetch waited (else 0).
  double stage_ahead(bool more_batches);
  void capture(ckpt::TrainingState& state);

  const Config& config_;
  const comm::Communicator& trainers_;
  const data::SourceSplits& data_;
  DataServiceLink service_;
  const Logger* log_;
  telemetry::Timeline* timeline_;
  std::chrono::duration<double> timeout_;
  data::SampleTransform transform_;
  std::unique_ptr<ComputeBackend> backend_;       // the model, optimiser and gradient exchange
  std::optional<model::LrSchedule> lr_schedule_;  // set by run()
  Progress progress_;
  StepInFlight step_;
  Reporting reporting_;
  AuditState audit_;
  std::optional<NoiseScaleMeter> noise_;  // train.noise_scale with 2 or more trainers
  // Built by run(); after progress_, whose offload schedule it uses.
  std::unique_ptr<data::BatchLoader> loader_;
};

}  // namespace conflux::train
