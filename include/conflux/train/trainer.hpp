#pragma once
/// @file trainer.hpp
/// Data-parallel training on the trainer ranks: deterministic epoch plan, local
/// preprocessing, forward/backward, gradient sum over trainers (comm.strategy: MPI allreduce
/// or K-Reduce; NCCL on GPUs), SGD, evaluation, on the CPU or a GPU (compute_backend.hpp).

#include <memory>
#include <span>
#include <vector>

#include <chrono>
#include <optional>
#include <string>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/comm/gradient_sync.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/elapsed.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/service/batch_loader.hpp"
#include "conflux/data/io/dataset.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/lr_schedule.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/sgd.hpp"
#include "conflux/offload/step_profiler.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/callbacks.hpp"
#include "conflux/train/compute_backend.hpp"
#include "conflux/train/device_choice.hpp"
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
  const data::DatasetSplits& data;
  DataServiceLink service = {};           ///< worker ranks to offload preprocessing to
  const Logger* log = nullptr;            ///< for warnings and data-service summaries; null: silent
  telemetry::Timeline* timeline = nullptr;  ///< records each step's phases; null: none
  DeviceChoice device = {};               ///< from choose_device(); default: the CPU
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
  struct EvalResult {
    double loss = 0;
    double accuracy = 0;
  };
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
  EvalResult evaluate();
  void check_replicas_agree(const std::string& digest) const;
  std::unique_ptr<data::BatchLoader> make_loader() const;
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
  double stage_ahead(bool epoch_goes_on);
  void capture(ckpt::TrainingState& state);
  EpochReport finish_epoch(const data::LoaderStats& stats_before);

  const Config& config_;
  const comm::Communicator& trainers_;
  const data::DatasetSplits& data_;
  DataServiceLink service_;
  const Logger* log_;
  telemetry::Timeline* timeline_;
  std::chrono::duration<double> timeout_;
  data::SampleTransform transform_;
  std::unique_ptr<ComputeBackend> backend_;    // the model, optimiser and gradient exchange
  std::optional<model::LrSchedule> schedule_;  // set by run()

  // Training progress; restore() sets it from a checkpoint.
  Position position_;
  offload::StepTimes step_times_;  // of the step just finished
  // The next step's batch, fetched and staged during this step (backends that stage ahead),
  // and the time its fetch waited for it.
  const data::Batch* prefetched_ = nullptr;
  double prefetch_wait_ = 0;
  double callbacks_seconds_ = 0;  // the previous step's callbacks
  Tally epoch_tally_;             // global, reported steps of the epoch so far
  Tally window_;                  // this trainer's steps since the last report
  double restored_epoch_seconds_ = 0;
  double restored_elapsed_seconds_ = 0;
  double offload_ratio_ = 0;
  double offload_credit_ = 0;
  std::vector<double> restored_audit_counts_;
  bool resumed_ = false;
  std::int64_t unaudited_epoch_ = -1;  // resumed mid-epoch from a checkpoint without audit
  std::vector<std::string> metrics_;   // metrics lines of the finished epochs
  Clock::time_point train_start_, epoch_start_, window_start_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::optional<SampleAudit> audit_;
};

}  // namespace conflux::train
