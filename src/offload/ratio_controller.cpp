#include "conflux/offload/ratio_controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace conflux::offload {

namespace {

// Smoothing of the per-window estimates: recent windows dominate, so drift shows within a
// few windows, while one noisy window moves an estimate only half-way.
constexpr double kSmoothing = 0.3;
// The search: first step, smallest step, and the rate change that counts as real (this
// machine's window-to-window noise is a few per cent).
constexpr double kSeedStep = 0.1;
constexpr double kMinStep = 0.02;
constexpr double kSignificant = 0.02;
// Once settled, the search probes every kSettledPause-th measurement, and restarts when the
// rate at the base moves by more than kChanged.
constexpr int kSettledPause = 4;
constexpr double kChanged = 0.1;

double smooth(double previous, double sample) {
  return previous > 0 ? previous + kSmoothing * (sample - previous) : sample;
}

void accumulate(ControllerInput& total, const ControllerInput& w) {
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

std::string describe(const RateEstimates& e, int live_workers) {
  return fmt::format(
      "compute ceiling {:.1f} batches/s, local pipeline {:.1f} batches/s, workers {:.1f} "
      "batches/s for this trainer ({} live), data waits {:.1f} % of the time",
      e.compute, e.local, e.remote, live_workers, 100 * e.wait_share);
}

int live_workers(const ControllerInput& w) {
  return static_cast<int>(std::count_if(w.workers.begin(), w.workers.end(),
                                        [](const ControllerInput::Worker& s) { return s.live; }));
}

}  // namespace

RatioController::RatioController(RatioControllerOptions options, double initial_ratio)
    : options_(options), ratio_(std::clamp(initial_ratio, 0.0, 1.0)) {}

void RatioController::update_estimates(const ControllerInput& w) {
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

double RatioController::model_target() const {
  const RateEstimates& e = estimates_;
  if (e.remote <= 0 || e.compute <= 0) return 0;
  if (e.local <= 0) return 1;
  const double wanted = e.compute * (1 + options_.headroom);
  if (e.local >= wanted) return 0;
  if (e.local + e.remote >= wanted) return 1 - e.local / wanted;
  return e.remote / (e.local + e.remote);
}

std::optional<RatioDecision> RatioController::on_window(const ControllerInput& w) {
  steps_seen_ += w.steps;
  switch (phase_) {
    case Phase::kWarmup:
      if (steps_seen_ >= static_cast<std::size_t>(options_.initial_steps)) {
        phase_ = Phase::kProfiling;
        steps_seen_ = 0;
      }
      return std::nullopt;
    case Phase::kProfiling:
      accumulate(startup_, w);
      if (steps_seen_ < static_cast<std::size_t>(options_.profile_steps)) return std::nullopt;
      return finish_startup();
    case Phase::kRunning:
      break;
  }
  return run(w);
}

RatioDecision RatioController::finish_startup() {
  phase_ = Phase::kRunning;
  update_estimates(startup_);
  const RateEstimates& e = estimates_;
  RatioDecision d{.previous = ratio_, .ratio = ratio_, .reason = {}, .estimates = e};
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
  base_ = d.ratio;
  live_ = live;
  climbing_ = d.ratio > 0;
  return d;
}

std::optional<RatioDecision> RatioController::decide(double ratio, bool probe, std::string why) {
  RatioDecision d{.previous = ratio_,
                  .ratio = std::clamp(ratio, 0.0, 1.0),
                  .reason = std::move(why),
                  .estimates = estimates_,
                  .probe = probe};
  if (std::abs(d.ratio - ratio_) < 1e-12) return std::nullopt;
  ratio_ = d.ratio;
  return d;
}

std::optional<RatioDecision> RatioController::seed(double ratio, const std::string& why, int live) {
  base_ = ratio;
  step_ = kSeedStep;
  reached_rate_ = 0;
  settled_ = 0;
  failures_at_smallest_ = 0;
  direction_ = -1;  // first try less offloading
  probing_ = false;
  eval_ = {};
  return decide(ratio, false,
                fmt::format("{}; {}; model {:.2f}", why, describe(estimates_, live), ratio));
}

std::optional<RatioDecision> RatioController::run(const ControllerInput& w) {
  update_estimates(w);
  const int live = live_workers(w);
  const int before = std::exchange(live_, live);
  // Workers lost, or back while offloading or after none: start again from the model (at
  // once, not one step at a time).
  if (live != before && (live == 0 || climbing_ || before == 0)) {
    return reseed_for_workers(live, before);
  }
  const std::optional<ControllerInput> period = measured_period(w);
  if (!period) return std::nullopt;
  const double rate = static_cast<double>(period->steps) / period->seconds;
  const double waits = (period->wait_local_s + period->wait_remote_s) / period->seconds;
  if (!climbing_) return start_when_input_bound(live, waits);
  // Extremum seeking on the measured rate: measure the base ratio, then a probe one step away,
  // and move to the probe when it is clearly faster. The model only seeds the search: on
  // shared cores the rates it assumes change with the ratio itself.
  if (!probing_) return probe_from_base(rate, waits);
  return judge_probe(rate, live);
}

std::optional<RatioDecision> RatioController::reseed_for_workers(int live, int before) {
  if (live == 0) {
    base_ = 0;
    climbing_ = false;
    return decide(0, false,
                  fmt::format("no worker is available any more ({} before); {}", before,
                              describe(estimates_, live)));
  }
  climbing_ = true;
  return seed(model_target(), fmt::format("{} live worker(s) instead of {}", live, before), live);
}

std::optional<ControllerInput> RatioController::measured_period(const ControllerInput& w) {
  accumulate(eval_, w);
  if (++eval_windows_ < options_.eval_windows) return std::nullopt;
  eval_windows_ = 0;
  ControllerInput period = std::exchange(eval_, {});
  if (period.seconds <= 0 || period.steps == 0) return std::nullopt;
  return period;
}

std::optional<RatioDecision> RatioController::start_when_input_bound(int live, double waits) {
  // Not offloading: start when the input pipeline became the bottleneck (heavier
  // augmentation, slower storage), judged as at start-up.
  const double pressure = estimates_.local > 0 ? estimates_.compute / estimates_.local : 0;
  if (live == 0 || waits <= options_.wait_tolerance || pressure <= options_.bottleneck_threshold) {
    return std::nullopt;
  }
  climbing_ = true;
  return seed(model_target(),
              fmt::format("input-bound now (compute ceiling / local pipeline = {:.2f} > "
                          "{:.2f}, data waits {:.1f} %)",
                          pressure, options_.bottleneck_threshold, 100 * waits),
              live);
}

std::optional<RatioDecision> RatioController::probe_from_base(double rate, double waits) {
  base_rate_ = rate;
  // Settled (the smallest step failed both ways): probe only now and then, unless the rate
  // moved, which means the conditions changed: then search again from the first step.
  if (settled_ > 0) {
    if (std::abs(rate / settled_rate_ - 1) > kChanged) {
      settled_ = 0;
      step_ = kSeedStep;
      reached_rate_ = 0;  // other conditions: what was reached before no longer holds
    } else if (--settled_ > 0) {
      return std::nullopt;
    } else {
      settled_ = kSettledPause;  // one probe, then pause again
    }
  }
  reached_rate_ = std::max(reached_rate_, rate);
  if (waits <= options_.wait_tolerance) direction_ = -1;  // fed: look for less offloading
  const double probe = std::clamp(base_ + direction_ * step_, 0.0, 1.0);
  if (std::abs(probe - base_) < 1e-12) {
    direction_ = -direction_;
    return std::nullopt;
  }
  probing_ = true;
  return decide(probe, true,
                fmt::format("probe {:.2f} (base {:.2f} gives {:.1f} steps/s, waits {:.1f} %)",
                            probe, base_, rate, 100 * waits));
}

std::optional<RatioDecision> RatioController::judge_probe(double rate, int live) {
  probing_ = false;
  const double probe = ratio_;  // the probe is in force
  const double old_base = base_;
  const double gain = base_rate_ > 0 ? rate / base_rate_ - 1 : 0;
  const bool faster = gain > kSignificant;
  // Less offloading may cost a little (within the noise), but only against the best rate
  // reached: against the last base, 1.5 % losses would be accepted one after another.
  const bool as_fast_with_less =
      probe < base_ && rate > std::max(base_rate_, reached_rate_) * (1 - kSignificant);
  const bool accepted = faster || as_fast_with_less;
  if (!accepted) {
    direction_ = -direction_;
    const double smallest = std::max(options_.hysteresis, kMinStep);
    if (step_ <= smallest && ++failures_at_smallest_ >= 2 && settled_ == 0) {
      settled_ = kSettledPause;
      settled_rate_ = base_rate_;
      failures_at_smallest_ = 0;
    }
    step_ = std::max(step_ / 2, smallest);
    // Back to the base: the end of a trial, not a new decision.
    return decide(base_, true,
                  fmt::format("probe {:.2f}: {:.1f} steps/s against {:.1f} ({:+.1f} %), back "
                              "to {:.2f}",
                              probe, rate, base_rate_, 100 * gain, base_));
  }
  base_ = probe;
  failures_at_smallest_ = 0;
  if (settled_ > 0) settled_rate_ = rate;
  return RatioDecision{
      .previous = old_base,
      .ratio = base_,
      .reason =
          fmt::format("{:.2f} gives {:.1f} steps/s against {:.1f} at {:.2f} ({:+.1f} %{}); "
                      "{}",
                      probe, rate, base_rate_, old_base, 100 * gain,
                      faster ? "" : ", as fast with less offloading", describe(estimates_, live)),
      .estimates = estimates_,
      .probe = false};
}

}  // namespace conflux::offload
