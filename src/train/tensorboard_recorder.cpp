#include "conflux/train/tensorboard_recorder.hpp"

#include <cmath>
#include <vector>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::train {

TensorBoardRecorder::TensorBoardRecorder(const Config& config)
    : events_(config.run().dir / run_files::kTensorBoard) {}

void TensorBoardRecorder::on_resume(const ckpt::TrainingState& state) {
  events_.add_session_start(static_cast<std::int64_t>(state.global_step) + 1);
}

void TensorBoardRecorder::on_step_report(const StepReport& r) {
  const telemetry::Scalar scalars[] = {
      {"train/loss", r.loss},
      {"train/accuracy", r.accuracy},
      {"train/learning_rate", r.learning_rate},
      {"throughput/samples_per_s", r.samples_per_s},
      {"input/data_wait_ms", r.data_wait_ms},
      {"input/offload_ratio", r.offload_ratio},
  };
  events_.add_scalars(static_cast<std::int64_t>(r.global_step), scalars);
}

void TensorBoardRecorder::on_epoch_end(const EpochReport& r) {
  std::vector<telemetry::Scalar> scalars = {
      {"epoch/train_loss", r.train_loss},
      {"epoch/train_accuracy", r.train_accuracy},
      {"epoch/samples_per_s", r.samples_per_s},
      {"epoch/epoch", static_cast<double>(r.epoch + 1)},
  };
  if (!std::isnan(r.test_accuracy)) {  // evaluation on
    scalars.push_back({"epoch/test_loss", r.test_loss});
    scalars.push_back({"epoch/test_accuracy", r.test_accuracy});
  }
  events_.add_scalars(static_cast<std::int64_t>(r.global_step), scalars);
}

}  // namespace conflux::train
