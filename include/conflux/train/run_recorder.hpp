#pragma once
/// @file run_recorder.hpp
/// Records a run in its directory (rank 0 only): steps.jsonl every train.log_every steps,
/// metrics.jsonl per epoch, the final model
/// (model.h5) and summary.json with the weight digest.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "conflux/config/config.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// Creates the run directory and writes the resolved config (config.toml) into it;
/// InputError when the directory cannot be created.
void prepare_run_dir(const Config& config);

/// One metrics.jsonl line (JSON object, no newline) for an epoch report: its
/// telemetry::EpochRecord.
std::string metrics_json_line(const EpochReport& report);

/// One steps.jsonl line (JSON object, no newline) for a step report: its
/// telemetry::StepRecord, which begins with {"step": N, so that a resumed run can drop the
/// steps after its checkpoint.
std::string steps_json_line(const StepReport& report);

/// Writes metrics and results into the run directory as training proceeds.
class RunRecorder final : public TrainingCallback {
 public:
  /// Opens <run.dir>/metrics.jsonl for appending.
  explicit RunRecorder(const Config& config);
  /// Rewrites metrics.jsonl with the checkpoint's history, dropping epochs reported after it,
  /// and drops the steps.jsonl lines of steps after the checkpoint.
  void on_resume(const ckpt::TrainingState& state) override;
  /// Appends a steps.jsonl line.
  void on_step_report(const StepReport& r) override;
  void on_epoch_end(const EpochReport& r) override;
  void on_train_end(const model::Model& model, const TrainSummary& s) override;

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  const Config& config_;
  std::unique_ptr<std::FILE, FileCloser> metrics_;
  std::unique_ptr<std::FILE, FileCloser> steps_;
};

}  // namespace conflux::train
