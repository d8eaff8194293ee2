#pragma once
/// @file tensorboard_recorder.hpp
/// The run's scalars as TensorBoard event files in <run.dir>/tensorboard/ (rank 0 only).

#include <optional>

#include "conflux/config/config.hpp"
#include "conflux/telemetry/event_file.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// Writes every step report and epoch report as scalars (the fields their field lists tag, in
/// telemetry/run_record.hpp; a NaN or unset value is left out), one event file per launch; a
/// resumed launch starts with a session start at the step after its checkpoint, so TensorBoard
/// drops the earlier launch's steps that are trained again.
class TensorBoardRecorder final : public TrainingCallback {
 public:
  /// Creates <run.dir>/tensorboard/ and this launch's event file.
  explicit TensorBoardRecorder(const Config& config);
  void on_resume(const ckpt::TrainingState& state) override;
  void on_step_report(const StepReport& r) override;
  void on_epoch_end(const EpochReport& r) override;

 private:
  telemetry::EventFileWriter events_;
};

}  // namespace conflux::train
