#include "conflux/train/pipeline_profiler.hpp"

#include <fmt/format.h>

#include "conflux/core/error.hpp"
#include "conflux/core/json.hpp"
#include "conflux/offload/offload_control.hpp"

namespace conflux::train {

namespace {

offload::ControllerOptions controller_options(const ProfileSection& p) {
  return {.initial_steps = static_cast<int>(p.initial_steps),
          .profile_steps = static_cast<int>(p.steps),
          .bottleneck_threshold = p.bottleneck_threshold,
          .hysteresis = p.hysteresis};
}

// The controller's measurement phases end exactly at these steps.
std::vector<std::size_t> phase_boundaries(const ProfileSection& p) {
  const auto warmup = static_cast<std::size_t>(p.initial_steps);
  return {warmup, warmup + static_cast<std::size_t>(p.steps)};
}

}  // namespace

PipelineProfiler::PipelineProfiler(PipelineProfilerOptions options)
    : options_(options),
      profiler_(options.config.profile().interval_s, phase_boundaries(options.config.profile())) {
  const auto path =
      options_.config.run().dir / fmt::format("profile-trainer{}.jsonl", options_.trainer);
  lines_.reset(std::fopen(path.c_str(), "a"));
  CONFLUX_CHECK(lines_ != nullptr, "cannot open {}", path.string());
}

void PipelineProfiler::on_step_end(StepContext& context) {
  const auto now = SteadyClock::now();
  const bool last = context.global_step() >= context.total_steps();  // the run's last window
  if (!profiler_.record(context.times(), now) && !last) return;
  offload::OffloadControl& offload = context.offload();
  const offload::ProfileWindow window =
      profiler_.close(offload.pipeline_counters(), offload.offload_ratio(), now);
  fmt::print(lines_.get(), "{}\n", offload::profile_json_line(window, options_.trainer));
  telemetry::Timeline* timeline = options_.timeline;
  if (timeline != nullptr && timeline->enabled()) {
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
  if (!options_.config.data().offload_auto) return;
  if (!controller_) {  // starts from the ratio in force (a resumed run's, or 0)
    controller_.emplace(controller_options(options_.config.profile()), window.offload_ratio);
  }
  const std::optional<offload::Decision> decision = controller_->on_window(window.sample);
  if (!decision) return;
  offload.set_offload_ratio(decision->ratio);
  if (timeline != nullptr && timeline->enabled())
    timeline->counter("offload ratio", decision->ratio);
  if (decision->probe) return;  // a trial of the search: on the timeline's counter only
  ++decisions_;
  if (options_.log != nullptr) {
    options_.log->info("offload: trainer {} at step {}: ratio {:.2f} -> {:.2f}: {}",
                       options_.trainer, context.global_step(), decision->previous, decision->ratio,
                       decision->reason);
  }
  if (timeline != nullptr && timeline->enabled()) {
    timeline->instant(
        "offload decision", "profile",
        fmt::format("{{\"from\": {}, \"to\": {}, \"reason\": {}}}", json_number(decision->previous),
                    json_number(decision->ratio), json_string(decision->reason)));
  }
}

void PipelineProfiler::on_train_end(const model::Model&, const TrainSummary&) {
  std::fflush(lines_.get());
}

}  // namespace conflux::train
