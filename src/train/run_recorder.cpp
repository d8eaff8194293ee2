#include "conflux/train/run_recorder.hpp"

#include <cmath>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/json.hpp"
#include "conflux/core/log.hpp"
#include "conflux/model/model_io.hpp"

namespace conflux::train {

void prepare_run_dir(const Config& config) {
  const auto& dir = config.run().dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  CONFLUX_REQUIRE(!ec, "{}: cannot create run.dir '{}': {}", config.where("run.dir"), dir.string(),
                  ec.message());
  publish_text_file(dir / "config.toml", config.resolved_toml());
}

RunRecorder::RunRecorder(const Config& config)
    : config_(config), metrics_(std::fopen((config.run().dir / "metrics.jsonl").c_str(), "a")) {
  CONFLUX_CHECK(metrics_ != nullptr, "cannot open {}",
                (config.run().dir / "metrics.jsonl").string());
}

std::string metrics_json_line(const EpochReport& r) {
  return fmt::format(
      "{{\"epoch\": {}, \"train_loss\": {}, \"train_accuracy\": {}, \"test_loss\": {}, "
      "\"test_accuracy\": {}, \"samples\": {}, \"samples_per_s\": {}, "
      "\"epoch_seconds\": {}, \"eval_seconds\": {}, \"elapsed_seconds\": {}, "
      "\"local_batches\": {}, \"worker_batches\": {}, \"fallback_batches\": {}, "
      "\"audited\": {}}}",
      r.epoch + 1, json_number(r.train_loss), json_number(r.train_accuracy),
      json_number(r.test_loss), json_number(r.test_accuracy), r.samples,
      json_number(r.samples_per_s), json_number(r.epoch_seconds), json_number(r.eval_seconds),
      json_number(r.elapsed_seconds), r.local_batches, r.worker_batches, r.fallback_batches,
      r.audited);
}

void RunRecorder::on_resume(const ckpt::TrainingState& state) {
  const auto path = config_.run().dir / "metrics.jsonl";
  std::string text;
  for (const std::string& line : state.metrics) text += line + "\n";
  metrics_.reset();
  publish_text_file(path, text);
  metrics_.reset(std::fopen(path.c_str(), "a"));
  CONFLUX_CHECK(metrics_ != nullptr, "cannot open {}", path.string());
}

void RunRecorder::on_epoch_end(const EpochReport& r) {
  fmt::print(metrics_.get(), "{}\n", metrics_json_line(r));
  std::fflush(metrics_.get());
}

void RunRecorder::on_train_end(const model::Model& model, const TrainSummary& s) {
  const auto& dir = config_.run().dir;
  model::save_model_hdf5(dir / "model.h5", model);
  publish_text_file(dir / "summary.json",
                    fmt::format("{{\"name\": {}, \"digest\": {}, \"final_test_accuracy\": {}, "
                                "\"epochs\": {}, \"total_seconds\": {}, \"parameters\": {}}}\n",
                                json_string(config_.run().name), json_string(s.digest),
                                json_number(s.final_test_accuracy), s.epochs,
                                json_number(s.total_seconds), model.params().size()));
}

}  // namespace conflux::train
