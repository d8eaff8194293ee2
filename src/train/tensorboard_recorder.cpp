#include "conflux/train/tensorboard_recorder.hpp"

#include "conflux/ckpt/training_state.hpp"
#include "conflux/telemetry/run_record_io.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::train {

TensorBoardRecorder::TensorBoardRecorder(const Config& config)
    : events_(config.run().dir / run_files::kTensorBoard) {}

void TensorBoardRecorder::on_resume(const ckpt::TrainingState& state) {
  events_.add_session_start(static_cast<std::int64_t>(state.global_step) + 1);
}

// Which fields are scalars, and their tags, is the field lists' (telemetry/run_record.hpp).
void TensorBoardRecorder::on_step_report(const StepReport& r) {
  events_.add_scalars(static_cast<std::int64_t>(r.step),
                      telemetry::tensorboard_scalars<telemetry::StepRecord>(r));
}

void TensorBoardRecorder::on_epoch_end(const EpochReport& r) {
  events_.add_scalars(static_cast<std::int64_t>(r.global_step),
                      telemetry::tensorboard_scalars<telemetry::EpochRecord>(r));
}

}  // namespace conflux::train
