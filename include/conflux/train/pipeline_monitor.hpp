#pragma once
/// @file pipeline_monitor.hpp
/// The training loop's monitoring hook ([profile]): feeds every step's timings to the window
/// meter, writes one profile.jsonl line and the timeline's counters per window, and with
/// data.offload_ratio = "auto" lets the ratio controller set this trainer's ratio, logging each
/// decision with its reason and marking it on the timeline.

#include <cstdio>
#include <memory>
#include <optional>

#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/offload/offload_settings.hpp"
#include "conflux/offload/ratio_control.hpp"
#include "conflux/offload/ratio_controller.hpp"
#include "conflux/offload/window_meter.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// Settings of a PipelineMonitor.
struct PipelineMonitorOptions {
  const Config& config;
  int trainer = 0;                          ///< this trainer's index
  const Logger* log = nullptr;              ///< decisions are logged here
  telemetry::Timeline* timeline = nullptr;  ///< decisions and ratios are marked here
};

/// Window meter and (with "auto") ratio controller of one trainer.
class PipelineMonitor : public TrainingCallback {
 public:
  explicit PipelineMonitor(PipelineMonitorOptions options);
  void on_step_end(StepContext& context) override;
  void on_train_end(const model::Model& model, const TrainSummary& summary) override;
  /// Ratio decisions taken so far.
  std::size_t decisions() const noexcept { return decisions_; }

 private:
  struct CloseFile {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  void mark_window(const offload::WindowReport& window) const;
  void tune(const offload::WindowReport& window, offload::RatioControl& control,
            std::size_t global_step);
  void announce(const offload::RatioDecision& decision, std::size_t global_step, double t_s);

  PipelineMonitorOptions options_;
  offload::OffloadSettings settings_;
  offload::WindowMeter meter_;
  std::optional<offload::RatioController> controller_;
  std::unique_ptr<std::FILE, CloseFile> lines_;
  std::unique_ptr<std::FILE, CloseFile> decision_lines_;  // opened at the first decision
  std::size_t decisions_ = 0;
};

}  // namespace conflux::train
