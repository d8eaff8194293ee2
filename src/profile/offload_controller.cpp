#include "conflux/profile/offload_controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace conflux::profile {

namespace {

// Smoothing of the per-window estimates: recent windows dominate, so drift shows within a
// few windows, while one noisy window moves an estimate only half-way.
constexpr double kSmoothing = 0.3;
// How fast data waits move the ratio (per window, per unit of wait share), and how far.
constexpr double kWaitGain = 0.15;
constexpr double kMaxBias = 0.3;

double smooth(double previous, double sample) {
  return previous > 0 ? previous + kSmoothing * (sample - previous) : sample;
}

void accumulate(WindowSample& total, const WindowSample& w) {
  total.seconds += w.seconds;
  total.steps += w.steps;
  total.wait_local_s += w.wait_local_s;
  total.wait_remote_s += w.wait_remote_s;
  total.busy_s += w.busy_s;
  total.local_built += w.local_built;
  total.local_build_s += w.local_build_s;
  total.trainers = w.trainers;
  total.workers = w.workers;
}

std::string describe(const Estimates& e, int live_workers) {
  return fmt::format(
      "compute ceiling {:.1f} batches/s, local pipeline {:.1f} batches/s, workers {:.1f} "
      "batches/s for this trainer ({} live), data waits {:.1f} % of the time",
      e.compute, e.local, e.remote, live_workers, 100 * e.wait_share);
}

int live_workers(const WindowSample& w) {
  return static_cast<int>(std::count_if(w.workers.begin(), w.workers.end(),
                                        [](const WorkerSample& s) { return s.live; }));
}

}  // namespace

OffloadController::OffloadController(ControllerOptions options, double initial_ratio)
    : options_(options), ratio_(std::clamp(initial_ratio, 0.0, 1.0)) {}

void OffloadController::update_estimates(const WindowSample& w) {
  if (w.steps > 0 && w.busy_s > 0) {
    estimates_.compute = smooth(estimates_.compute, static_cast<double>(w.steps) / w.busy_s);
  }
  if (w.local_built > 0 && w.local_build_s > 0) {
    estimates_.local =
        smooth(estimates_.local, static_cast<double>(w.local_built) / w.local_build_s);
  }
  worker_build_s_.resize(w.workers.size(), 0);
  for (std::size_t i = 0; i < w.workers.size(); ++i) {
    if (w.workers[i].build_seconds > 0) {
      worker_build_s_[i] = smooth(worker_build_s_[i], w.workers[i].build_seconds);
    }
  }
  // A worker that has not answered yet is assumed as fast as the trainer's own threads (same
  // work, same kind of CPU) until its first answers say otherwise.
  double known = 0;
  int known_count = 0, unknown_count = 0;
  for (std::size_t i = 0; i < w.workers.size(); ++i) {
    if (!w.workers[i].live) continue;
    if (worker_build_s_[i] > 0) {
      known += 1 / worker_build_s_[i];
      ++known_count;
    } else {
      ++unknown_count;
    }
  }
  const double per_unknown = known_count > 0 ? known / known_count : estimates_.local;
  estimates_.remote =
      (known + unknown_count * per_unknown) / std::max(1, w.trainers);  // an equal share each
  estimates_.wait_share = w.seconds > 0 ? (w.wait_local_s + w.wait_remote_s) / w.seconds : 0;
}

double OffloadController::model_target() const {
  const Estimates& e = estimates_;
  if (e.remote <= 0 || e.compute <= 0) return 0;
  if (e.local <= 0) return 1;
  const double wanted = e.compute * (1 + options_.headroom);
  if (e.local >= wanted) return 0;
  if (e.local + e.remote >= wanted) return 1 - e.local / wanted;
  return e.remote / (e.local + e.remote);
}

std::optional<Decision> OffloadController::on_window(const WindowSample& w) {
  steps_seen_ += w.steps;
  switch (phase_) {
    case Phase::kWarmup:
      if (steps_seen_ >= static_cast<std::size_t>(options_.initial_steps)) {
        phase_ = Phase::kProfiling;
        steps_seen_ = 0;
      }
      return std::nullopt;
    case Phase::kProfiling: {
      accumulate(startup_, w);
      if (steps_seen_ < static_cast<std::size_t>(options_.profile_steps)) return std::nullopt;
      phase_ = Phase::kRunning;
      update_estimates(startup_);
      const Estimates& e = estimates_;
      Decision d{.previous = ratio_, .ratio = ratio_, .reason = {}, .estimates = e};
      const double pressure = e.local > 0 ? e.compute / e.local : 0;
      const int live = live_workers(startup_);
      if (pressure <= options_.bottleneck_threshold) {
        d.ratio = 0;
        d.reason = fmt::format(
            "start-up profile over {} steps: not input-bound (compute ceiling / local pipeline "
            "= {:.2f} <= {:.2f}), no offloading; {}",
            startup_.steps, pressure, options_.bottleneck_threshold, describe(e, live));
      } else if (live == 0) {
        d.ratio = 0;
        d.reason = fmt::format(
            "start-up profile over {} steps: input-bound (compute ceiling / local pipeline = "
            "{:.2f} > {:.2f}) but no worker is available; {}",
            startup_.steps, pressure, options_.bottleneck_threshold, describe(e, live));
      } else {
        d.ratio = model_target();
        d.reason = fmt::format(
            "start-up profile over {} steps: input-bound (compute ceiling / local pipeline = "
            "{:.2f} > {:.2f}), offloading {:.2f}; {}",
            startup_.steps, pressure, options_.bottleneck_threshold, d.ratio, describe(e, live));
      }
      ratio_ = d.ratio;
      return d;
    }
    case Phase::kRunning:
      break;
  }
  update_estimates(w);
  // Waits say which source fell behind the model: the integral of the imbalance corrects the
  // model's target (slowly: single windows are noisy), and fades once the waits are gone.
  const double share = estimates_.wait_share;
  if (share > options_.wait_tolerance && w.seconds > 0) {
    bias_ += kWaitGain * (w.wait_local_s - w.wait_remote_s) / w.seconds;
  } else {
    bias_ *= 0.8;
  }
  bias_ = std::clamp(bias_, -kMaxBias, kMaxBias);
  const int live = live_workers(w);
  double target = live == 0 ? 0 : std::clamp(model_target() + bias_, 0.0, 1.0);
  if (live > 0) {
    target = std::clamp(target, ratio_ - options_.max_step, ratio_ + options_.max_step);
  }
  if (std::abs(target - ratio_) <= options_.hysteresis && !(live == 0 && ratio_ > 0)) {
    return std::nullopt;
  }
  Decision d{.previous = ratio_, .ratio = target, .reason = {}, .estimates = estimates_};
  d.reason = fmt::format("{}; model {:.2f}, wait correction {:+.2f}", describe(estimates_, live),
                         model_target(), bias_);
  ratio_ = target;
  return d;
}

}  // namespace conflux::profile
