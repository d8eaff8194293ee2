#include "conflux/profile/offload_controller.hpp"

#include <gtest/gtest.h>

namespace conflux::profile {
namespace {

// A window of `steps` steps of a trainer whose compute takes `compute_s` per step, whose own
// threads build a batch in `local_s`, and whose workers build one in `worker_s` each.
WindowSample window(std::size_t steps, double compute_s, double local_s,
                    std::vector<double> worker_s, double wait_local = 0, double wait_remote = 0) {
  WindowSample w;
  w.steps = steps;
  w.busy_s = compute_s * static_cast<double>(steps);
  w.wait_local_s = wait_local;
  w.wait_remote_s = wait_remote;
  w.seconds = w.busy_s + wait_local + wait_remote;
  w.local_built = steps;
  w.local_build_s = local_s * static_cast<double>(steps);
  for (const double s : worker_s) w.workers.push_back({.live = true, .build_seconds = s});
  return w;
}

// Runs the warm-up and the start-up measurement; returns the start-up decision.
Decision start(OffloadController& c, const WindowSample& w) {
  EXPECT_FALSE(c.on_window(w).has_value());  // 5 warm-up steps (the defaults)
  const auto d = c.on_window(w);             // 20 measured steps
  EXPECT_TRUE(d.has_value());
  EXPECT_TRUE(c.profiled());
  return d.value_or(Decision{});
}

ControllerOptions options() {
  return {.initial_steps = 5, .profile_steps = 20};
}

TEST(OffloadController, ComputeBoundJobIsNotOffloaded) {
  OffloadController c(options());
  // Compute 10 ms per step, local builds 4 ms: the pipeline is 2.5x faster than needed.
  const Decision d = start(c, window(20, 0.010, 0.004, {0.004, 0.004}));
  EXPECT_EQ(d.ratio, 0);
  EXPECT_NE(d.reason.find("not input-bound"), std::string::npos) << d.reason;
  // Running on, with no waits, the ratio stays 0.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(c.on_window(window(50, 0.010, 0.004, {0.004})));
  EXPECT_EQ(c.ratio(), 0);
}

TEST(OffloadController, BelowTheThresholdStaysLocalAtStartUp) {
  OffloadController c(options());
  // C / L = 1.2 <= 1.3: FastFlow's rule says compute-bound.
  const Decision d = start(c, window(20, 0.010, 0.012, {0.012}));
  EXPECT_EQ(d.ratio, 0);
}

TEST(OffloadController, InputBoundWithAmpleWorkersOffloadsTheLeastThatReachesCompute) {
  OffloadController c(options());
  // C = 500/s, L = 100/s, workers 4 x 200/s: r = 1 - L / (1.05 C).
  const Decision d = start(c, window(20, 0.002, 0.010, {0.005, 0.005, 0.005, 0.005}));
  EXPECT_NEAR(d.ratio, 1 - 100.0 / (1.05 * 500.0), 1e-9);
  EXPECT_NE(d.reason.find("input-bound"), std::string::npos) << d.reason;
  EXPECT_NEAR(d.estimates.compute, 500, 1e-6);
  EXPECT_NEAR(d.estimates.local, 100, 1e-6);
  EXPECT_NEAR(d.estimates.remote, 800, 1e-6);
}

TEST(OffloadController, ScarceWorkersBalanceBothSources) {
  OffloadController c(options());
  // C = 500/s, L = 100/s, one worker at 100/s: L + R < C, so r = R / (L + R) = 0.5.
  const Decision d = start(c, window(20, 0.002, 0.010, {0.010}));
  EXPECT_NEAR(d.ratio, 0.5, 1e-9);
}

TEST(OffloadController, WorkersAreSharedAmongTrainers) {
  OffloadController c(options());
  WindowSample w = window(20, 0.002, 0.010, {0.005});  // one worker at 200/s, 4 trainers
  w.trainers = 4;
  const Decision d = start(c, w);
  EXPECT_NEAR(d.estimates.remote, 50, 1e-6);
  EXPECT_NEAR(d.ratio, 50.0 / 150.0, 1e-9);
}

TEST(OffloadController, InputBoundWithoutWorkersSaysSo) {
  OffloadController c(options());
  const Decision d = start(c, window(20, 0.002, 0.010, {}));
  EXPECT_EQ(d.ratio, 0);
  EXPECT_NE(d.reason.find("no worker"), std::string::npos) << d.reason;
}

TEST(OffloadController, ASlowerWorkerLowersTheRatio) {
  OffloadController c(options());
  start(c, window(20, 0.002, 0.010, {0.010, 0.010}));  // L = 100, R = 200: r = 2/3
  const double before = c.ratio();
  EXPECT_NEAR(before, 2.0 / 3.0, 1e-9);
  // Worker 0 becomes 2x slower: R = 150, the balance point is 0.6. The ratio moves there
  // within a few windows, never by more than max_step at once.
  double previous = before;
  for (int i = 0; i < 20; ++i) {
    if (const auto d = c.on_window(window(50, 0.002, 0.010, {0.020, 0.010}))) {
      EXPECT_LE(std::abs(d->ratio - previous), options().max_step + 1e-12);
      previous = d->ratio;
    }
  }
  EXPECT_NEAR(c.ratio(), 0.6, options().hysteresis + 0.01);
}

TEST(OffloadController, AWorkerThatStopsAnsweringIsNotCountedAndNoneLeftMeansZero) {
  OffloadController c(options());
  start(c, window(20, 0.002, 0.010, {0.010, 0.010}));
  WindowSample w = window(50, 0.002, 0.010, {0.010, 0.010});
  w.workers[1].live = false;  // in back-off after a missed deadline
  for (int i = 0; i < 10; ++i) c.on_window(w);
  EXPECT_NEAR(c.ratio(), 0.5, options().hysteresis + 0.01);  // one worker left: R = L
  w.workers[0].live = false;
  const auto d = c.on_window(w);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->ratio, 0);  // at once, not max_step at a time
}

TEST(OffloadController, LocalWaitsRaiseTheRatioRemoteWaitsLowerIt) {
  OffloadController up(options()), down(options());
  start(up, window(20, 0.002, 0.010, {0.010}));
  start(down, window(20, 0.002, 0.010, {0.010}));
  const double balanced = up.ratio();
  for (int i = 0; i < 6; ++i) {
    up.on_window(window(50, 0.002, 0.010, {0.010}, /*wait_local=*/0.05, 0));
    down.on_window(window(50, 0.002, 0.010, {0.010}, 0, /*wait_remote=*/0.05));
  }
  EXPECT_GT(up.ratio(), balanced + options().hysteresis);
  EXPECT_LT(down.ratio(), balanced - options().hysteresis);
}

TEST(OffloadController, SmallChangesAreHeldBackByTheHysteresis) {
  OffloadController c(options());
  start(c, window(20, 0.002, 0.010, {0.010}));  // 0.5
  // A worker 4 % faster moves the balance point by about 0.01: no decision.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(c.on_window(window(50, 0.002, 0.010, {0.0096})));
  EXPECT_NEAR(c.ratio(), 0.5, 1e-12);
}

}  // namespace
}  // namespace conflux::profile
