#pragma once
/// @file callbacks.hpp
/// The training loop's callback interface: cross-cutting features (progress, metrics,
/// checkpointing, profiling and offload control) hook in here so that the loop stays short.

#include <cstddef>
#include <string>

namespace conflux::model {
class Model;
}
namespace conflux::offload {
class RatioControl;
struct StepTimes;
}  // namespace conflux::offload
namespace conflux::ckpt {
struct TrainingState;
}

namespace conflux::train {

/// Totals over all trainers since the previous report.
struct StepReport {
  int epoch = 0;         ///< 0-based
  std::size_t step = 0;  ///< 0-based step within the epoch
  std::size_t steps_in_epoch = 0;
  double loss = 0;              ///< mean training loss since the last report
  double accuracy = 0;          ///< training accuracy since the last report
  double samples_per_s = 0;     ///< global training throughput since the last report
  std::size_t global_step = 0;  ///< steps completed over the run (a resumed run continues)
  std::size_t total_steps = 0;  ///< steps of the whole run
  double learning_rate = 0;     ///< the rate of the step just trained
  double data_wait_ms = 0;     ///< mean wait for a batch per step and trainer since the last report
  double offload_ratio = 0;    ///< this trainer's offload ratio now
  double elapsed_seconds = 0;  ///< since training began (earlier launches included)
  double eta_seconds =
      0;  ///< remaining steps at this launch's mean step rate (evaluation included)
};

/// One epoch's results (global over trainers).
struct EpochReport {
  int epoch = 0;  ///< 0-based
  int epochs = 0;
  double train_loss = 0;
  double train_accuracy = 0;
  double test_loss = 0;      ///< NaN when evaluation is off
  double test_accuracy = 0;  ///< NaN when evaluation is off
  double samples_per_s = 0;  ///< training samples per second (evaluation excluded)
  double epoch_seconds = 0;  ///< training time of the epoch (evaluation excluded)
  double eval_seconds = 0;
  double elapsed_seconds = 0;        ///< since training started
  std::size_t global_step = 0;       ///< steps completed over the run at the epoch's end
  std::size_t samples = 0;           ///< training samples in the epoch
  std::size_t local_batches = 0;     ///< batches built by trainers themselves (all trainers)
  std::size_t worker_batches = 0;    ///< batches built by worker ranks
  std::size_t fallback_batches = 0;  ///< batches built by trainers after a worker timed out
  bool audited = false;              ///< data.audit verified every sample was used once
  /// train.noise_scale: the epoch's steps that estimated the gradient noise scale (0: not
  /// measured), B_noise = tr(Sigma) / |G|^2 (NaN when not positive), and its two parts.
  std::size_t noise_steps = 0;
  double noise_scale = 0;
  double grad_norm2 = 0;
  double grad_trace = 0;
};

/// The end of training.
struct TrainSummary {
  std::string digest;  ///< SHA-256 of the final weights
  double final_test_accuracy = 0;
  double total_seconds = 0;
  int epochs = 0;
  bool stopped = false;         ///< a callback stopped training early (e.g. on a signal)
  std::size_t global_step = 0;  ///< steps completed over the run
  /// Workers some trainer left behind at shutdown (they stopped answering); agreed over the
  /// trainers. The job then ends without the collective exit (docs/data-service.md).
  std::size_t lost_workers = 0;
};

/// What a callback sees, and may do, at the end of a step.
class StepContext {
 public:
  virtual ~StepContext() = default;
  /// Steps completed over the run (a resumed run continues the count).
  virtual std::size_t global_step() const noexcept = 0;
  /// Steps of the whole run.
  virtual std::size_t total_steps() const noexcept = 0;
  /// The input pipeline's offload ratio (of the batches scheduled from now on) and counters.
  virtual offload::RatioControl& offload() noexcept = 0;
  /// Where the step just finished spent its time (its callbacks: those of the step before).
  virtual const offload::StepTimes& times() const noexcept = 0;
  /// Collective over the trainers (all call it after the same step): the complete training
  /// state into `state`, reusing its buffers. The model and optimiser are copied on trainer 0
  /// only (the replicas are identical); every trainer gets the position and progress.
  virtual void capture(ckpt::TrainingState& state) = 0;
  /// Ends training after this step; every trainer must request it at the same step.
  virtual void request_stop() noexcept = 0;
};

/// Hooks called by the trainer on every trainer rank, in order of registration.
class TrainingCallback {
 public:
  virtual ~TrainingCallback() = default;
  /// Before on_train_begin when the run continues from a checkpoint.
  virtual void on_resume(const ckpt::TrainingState& /*state*/) {}
  /// Before the first step.
  virtual void on_train_begin(const model::Model& /*model*/) {}
  /// After every step.
  virtual void on_step_end(StepContext& /*context*/) {}
  /// After a step when the trainer produced a report (every train.log_every steps).
  virtual void on_step_report(const StepReport& /*report*/) {}
  /// After each epoch's evaluation.
  virtual void on_epoch_end(const EpochReport& /*report*/) {}
  /// After the last epoch (not called when training was stopped early).
  virtual void on_train_end(const model::Model& /*model*/, const TrainSummary& /*summary*/) {}
};

}  // namespace conflux::train
