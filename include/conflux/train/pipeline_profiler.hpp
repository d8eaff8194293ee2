#pragma once
/// @file pipeline_profiler.hpp
/// The training loop's profiling hook: feeds every step's timings to the step profiler, writes
/// one profile.jsonl line per window, and with data.offload_ratio = "auto" lets the offload
/// controller set this trainer's ratio, logging each decision with its reason and marking it
/// on the timeline.

#include <cstdio>
#include <memory>
#include <optional>

#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/offload/offload_controller.hpp"
#include "conflux/offload/step_profiler.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// Settings of a PipelineProfiler.
struct PipelineProfilerOptions {
  const Config& config;
  int trainer = 0;                        ///< this trainer's index
  const Logger* log = nullptr;            ///< decisions are logged here
  telemetry::Timeline* timeline = nullptr;  ///< decisions and ratios are marked here
};

/// Step profiler and (with "auto") offload controller of one trainer.
class PipelineProfiler : public TrainingCallback {
 public:
  explicit PipelineProfiler(PipelineProfilerOptions options);
  void on_step_end(StepContext& context) override;
  void on_train_end(const model::Model& model, const TrainSummary& summary) override;
  /// Ratio decisions taken so far.
  std::size_t decisions() const noexcept { return decisions_; }

 private:
  struct CloseFile {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  PipelineProfilerOptions options_;
  offload::StepProfiler profiler_;
  std::optional<offload::OffloadController> controller_;
  std::unique_ptr<std::FILE, CloseFile> lines_;
  std::size_t decisions_ = 0;
};

}  // namespace conflux::train
