#include "conflux/train/pipeline_monitor.hpp"

#include <fmt/format.h>

#include "conflux/core/error.hpp"
#include "conflux/core/json.hpp"
#include "conflux/telemetry/run_record_io.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::train {

PipelineMonitor::PipelineMonitor(PipelineMonitorOptions options)
    : options_(options),
      settings_(offload::offload_settings(options.config, options.trainer)),
      meter_(settings_.window_s, settings_.window_ends) {
  const auto path = options_.config.run().dir / run_files::profile(options_.trainer);
  lines_.reset(std::fopen(path.c_str(), "a"));
  CONFLUX_CHECK(lines_ != nullptr, "cannot open {}", path.string());
}

void PipelineMonitor::on_step_end(StepContext& context) {
  const auto now = SteadyClock::now();
  const bool last = context.global_step() >= context.total_steps();  // the run's last window
  if (!meter_.record(context.times(), now) && !last) return;
  offload::RatioControl& control = context.offload();
  const offload::WindowReport window =
      meter_.close(control.pipeline_counters(), control.offload_ratio(), now);
  fmt::print(lines_.get(), "{}\n", offload::profile_json_line(window, options_.trainer));
  std::fflush(lines_.get());  // a window a line, readable while the run goes
  mark_window(window);
  if (settings_.automatic) tune(window, control, context.global_step());
}

void PipelineMonitor::mark_window(const offload::WindowReport& window) const {
  telemetry::Timeline* timeline = options_.timeline;
  if (timeline == nullptr || !timeline->enabled()) return;
  const double steps = std::max<double>(1, static_cast<double>(window.steps));
  timeline->counter("data wait ms per step", 1e3 * window.total.data_wait / steps);
  timeline->counter("steps per s", window.seconds > 0 ? window.steps / window.seconds : 0);
  std::uint32_t in_flight = 0;
  for (const auto& w : window.workers) {
    in_flight += w.in_flight;
    if (w.timeouts > 0) {
      timeline->instant("worker timeout", "data",
                        fmt::format("{{\"timeouts\": {}, \"live\": {}}}", w.timeouts, w.live));
    }
  }
  timeline->counter("requests in flight", in_flight);
}

void PipelineMonitor::tune(const offload::WindowReport& window, offload::RatioControl& control,
                           std::size_t global_step) {
  if (!controller_) {  // starts from the ratio in force (a resumed run's, or the start ratio)
    controller_.emplace(settings_.controller, window.offload_ratio);
  }
  const std::optional<offload::RatioDecision> decision = controller_->on_window(window.input);
  if (!decision) return;
  control.set_offload_ratio(decision->ratio);
  telemetry::Timeline* timeline = options_.timeline;
  if (timeline != nullptr && timeline->enabled()) {
    timeline->counter("offload ratio", decision->ratio);
  }
  if (decision->probe) return;  // a trial of the search: on the timeline's counter only
  ++decisions_;
  announce(*decision, global_step, window.start_s + window.seconds);
}

void PipelineMonitor::announce(const offload::RatioDecision& decision, std::size_t global_step,
                               double t_s) {
  if (options_.log != nullptr) {
    options_.log->info("offload: trainer {} at step {}: ratio {:.2f} -> {:.2f}: {}",
                       options_.trainer, global_step, decision.previous, decision.ratio,
                       decision.reason);
  }
  telemetry::Timeline* timeline = options_.timeline;
  if (timeline != nullptr && timeline->enabled()) {
    timeline->instant(
        "offload decision", "profile",
        fmt::format("{{\"from\": {}, \"to\": {}, \"reason\": {}}}", json_number(decision.previous),
                    json_number(decision.ratio), json_string(decision.reason)));
  }
  if (!decision_lines_) {
    const auto path = options_.config.run().dir / run_files::decisions(options_.trainer);
    decision_lines_.reset(std::fopen(path.c_str(), "a"));
    CONFLUX_CHECK(decision_lines_ != nullptr, "cannot open {}", path.string());
  }
  const telemetry::DecisionRecord line{.trainer = options_.trainer,
                                       .step = global_step,
                                       .t_s = t_s,
                                       .from = decision.previous,
                                       .to = decision.ratio,
                                       .reason = decision.reason};
  fmt::print(decision_lines_.get(), "{}\n", telemetry::record_json(line));
  std::fflush(decision_lines_.get());
}

void PipelineMonitor::on_train_end(const model::Model&, const TrainSummary&) {
  std::fflush(lines_.get());
}

}  // namespace conflux::train
