#pragma once
/// @file callbacks.hpp
/// The training loop's callback interface: cross-cutting features (progress, metrics,
/// checkpointing, profiling and offload control) hook in here so that the loop stays short.

#include <cstddef>
#include <string>

#include "conflux/telemetry/run_record.hpp"

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

/// A report of the steps since the previous one, totals over all trainers: the steps.jsonl
/// line (telemetry::StepRecord, whose field list declares what it holds) and what callbacks
/// need beside it.
struct StepReport : telemetry::StepRecord {
  std::size_t total_steps = 0;  ///< steps of the whole run
};

/// One epoch's results (global over trainers): the metrics.jsonl line
/// (telemetry::EpochRecord; test_loss and test_accuracy are NaN when evaluation is off, the
/// noise scale's fields unset when it was not measured) and what callbacks need beside it.
struct EpochReport : telemetry::EpochRecord {
  int epochs = 0;               ///< epochs of the run
  std::size_t global_step = 0;  ///< steps completed over the run at the epoch's end
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
