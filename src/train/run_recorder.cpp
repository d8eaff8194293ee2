#include "conflux/train/run_recorder.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/json.hpp"
#include "conflux/core/log.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/telemetry/run_record_io.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::train {

void prepare_run_dir(const Config& config) {
  const auto& dir = config.run().dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  CONFLUX_REQUIRE(!ec, "{}: cannot create run.dir '{}': {}", config.where("run.dir"), dir.string(),
                  ec.message());
  publish_text_file(dir / run_files::kConfig, config.resolved_toml());
}

namespace {

std::FILE* open_for_append(const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  CONFLUX_CHECK(file != nullptr, "cannot open {} for appending: {}", path.string(),
                std::strerror(errno));
  return file;
}

// The global step a steps.jsonl line reports ({"step": N, ...}); none for a torn line.
std::optional<std::size_t> line_step(std::string_view line) {
  constexpr std::string_view kPrefix = "{\"step\": ";
  if (!line.starts_with(kPrefix) || !line.ends_with('}')) return std::nullopt;
  std::size_t step = 0;
  const char* first = line.data() + kPrefix.size();
  const auto [end, ec] = std::from_chars(first, line.data() + line.size(), step);
  if (ec != std::errc() || end == first) return std::nullopt;
  return step;
}

// Keeps the lines of `path` that report steps up to `last_step` (the checkpoint's): the steps
// after it are trained again, and reported again.
void keep_steps_until(const std::filesystem::path& path, std::size_t last_step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    const auto step = line_step(line);
    if (step && *step <= last_step) kept += line + "\n";
  }
  publish_text_file(path, kept);
}

}  // namespace

RunRecorder::RunRecorder(const Config& config)
    : config_(config),
      metrics_(open_for_append(config.run().dir / run_files::kMetrics)),
      steps_(open_for_append(config.run().dir / run_files::kSteps)) {}

std::string steps_json_line(const StepReport& r) {
  return telemetry::record_json<telemetry::StepRecord>(r);
}

std::string metrics_json_line(const EpochReport& r) {
  return telemetry::record_json<telemetry::EpochRecord>(r);
}

void RunRecorder::on_resume(const ckpt::TrainingState& state) {
  const auto path = config_.run().dir / run_files::kMetrics;
  std::string text;
  for (const std::string& line : state.metrics) text += line + "\n";
  metrics_.reset();
  publish_text_file(path, text);
  metrics_.reset(open_for_append(path));
  const auto steps_path = config_.run().dir / run_files::kSteps;
  steps_.reset();
  keep_steps_until(steps_path, state.global_step);
  steps_.reset(open_for_append(steps_path));
}

void RunRecorder::on_step_report(const StepReport& r) {
  // Flushed per line: a crash or kill loses no reported step.
  fmt::print(steps_.get(), "{}\n", steps_json_line(r));
  std::fflush(steps_.get());
}

void RunRecorder::on_epoch_end(const EpochReport& r) {
  fmt::print(metrics_.get(), "{}\n", metrics_json_line(r));
  std::fflush(metrics_.get());
}

void RunRecorder::on_train_end(const model::Model& model, const TrainSummary& s) {
  const auto& dir = config_.run().dir;
  model::save_model_hdf5(dir / "model.h5", model);
  publish_text_file(dir / run_files::kSummary,
                    fmt::format("{{\"name\": {}, \"digest\": {}, \"final_test_accuracy\": {}, "
                                "\"epochs\": {}, \"total_seconds\": {}, \"parameters\": {}}}\n",
                                json_string(config_.run().name), json_string(s.digest),
                                json_number(s.final_test_accuracy), s.epochs,
                                json_number(s.total_seconds), model.params().size()));
}

}  // namespace conflux::train
