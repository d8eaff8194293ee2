#include "conflux/offload/window_meter.hpp"

#include <algorithm>

#include "conflux/telemetry/run_record_io.hpp"

namespace conflux::offload {

WindowMeter::WindowMeter(double interval_s, std::vector<std::size_t> boundaries)
    : interval_(std::chrono::duration_cast<SteadyClock::duration>(
          std::chrono::duration<double>(interval_s))),
      boundaries_(std::move(boundaries)),
      origin_(SteadyClock::now()),
      window_start_(origin_) {}

bool WindowMeter::record(const StepTimes& t, SteadyClock::time_point now) {
  ++steps_;
  window_.data_wait += t.data_wait;
  window_.compute += t.compute;
  window_.sync += t.sync;
  window_.callbacks += t.callbacks;
  return now - window_start_ >= interval_ ||
         std::find(boundaries_.begin(), boundaries_.end(), steps_) != boundaries_.end();
}

WindowReport WindowMeter::close(const PipelineCounters& c, double offload_ratio,
                                SteadyClock::time_point now) {
  WindowReport w;
  w.start_s = std::chrono::duration<double>(window_start_ - origin_).count();
  w.seconds = std::chrono::duration<double>(now - window_start_).count();
  w.first_step = window_first_step_;
  w.steps = steps_ - window_first_step_;
  w.total = window_;
  w.offload_ratio = offload_ratio;
  w.local_built = c.local_built - previous_.local_built;
  const double local_seconds = c.local_build_seconds - previous_.local_build_seconds;
  w.local_build_rate = w.local_built > 0 && local_seconds > 0 ? w.local_built / local_seconds : 0;
  w.delivered = c.delivered - previous_.delivered;

  ControllerInput& in = w.input;
  in.seconds = w.seconds;
  in.steps = w.steps;
  // Waits as the loader measured them, split by source; the loop's own measurement
  // (total.data_wait) includes them.
  in.wait_local_s = c.wait_local_seconds - previous_.wait_local_seconds;
  in.wait_remote_s = c.wait_remote_seconds - previous_.wait_remote_seconds;
  in.busy_s = window_.compute + window_.sync + window_.callbacks;
  in.local_built = w.local_built;
  in.local_build_s = local_seconds;
  in.trainers = c.trainers;
  add_workers(c, w);
  previous_ = c;
  window_ = {};
  window_start_ = now;
  window_first_step_ = steps_;
  return w;
}

void WindowMeter::add_workers(const PipelineCounters& c, WindowReport& w) const {
  for (std::size_t i = 0; i < c.workers.size(); ++i) {
    const WorkerCounters& now_c = c.workers[i];
    const WorkerCounters before =
        i < previous_.workers.size() ? previous_.workers[i] : WorkerCounters{};
    WorkerReport ww;
    ww.live = now_c.live;
    ww.answers = now_c.answers - before.answers;
    ww.timeouts = now_c.timeouts - before.timeouts;
    ww.service_rate = now_c.last_build_seconds > 0 ? 1 / now_c.last_build_seconds : 0;
    ww.busy_fraction = now_c.last_busy_fraction;
    ww.queue_depth = now_c.last_queued;
    ww.in_flight = now_c.in_flight;
    w.workers.push_back(ww);
    // The mean service time over the window's answers; the latest one when it had none.
    const double window_build = now_c.total_build_seconds - before.total_build_seconds;
    w.input.workers.push_back({.live = now_c.live,
                               .build_seconds = ww.answers > 0
                                                    ? window_build / static_cast<double>(ww.answers)
                                                    : now_c.last_build_seconds});
  }
}

telemetry::WindowRecord profile_record(const WindowReport& w, int trainer) {
  telemetry::WindowRecord r;
  r.trainer = trainer;
  r.t_s = w.start_s;
  r.window_s = w.seconds;
  r.first_step = w.first_step;
  r.steps = w.steps;
  r.steps_per_s = w.seconds > 0 ? static_cast<double>(w.steps) / w.seconds : 0;
  const double steps = std::max<double>(1, static_cast<double>(w.steps));
  r.data_wait_ms = 1e3 * w.total.data_wait / steps;
  r.compute_ms = 1e3 * w.total.compute / steps;
  r.sync_ms = 1e3 * w.total.sync / steps;
  r.callbacks_ms = 1e3 * w.total.callbacks / steps;
  r.wait_local_s = w.input.wait_local_s;
  r.wait_remote_s = w.input.wait_remote_s;
  r.offload_ratio = w.offload_ratio;
  r.local_built = w.local_built;
  r.local_batches_per_s = w.local_build_rate;
  r.delivered = w.delivered;
  for (std::size_t i = 0; i < w.workers.size(); ++i) {
    const WorkerReport& k = w.workers[i];
    r.workers.push_back({.worker = i,
                         .live = k.live,
                         .answers = k.answers,
                         .timeouts = k.timeouts,
                         .service_batches_per_s = k.service_rate,
                         .busy_fraction = k.busy_fraction,
                         .queue_depth = k.queue_depth,
                         .in_flight = k.in_flight});
  }
  return r;
}

std::string profile_json_line(const WindowReport& w, int trainer) {
  return telemetry::record_json(profile_record(w, trainer));
}

}  // namespace conflux::offload
