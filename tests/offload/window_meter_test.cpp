#include "conflux/offload/window_meter.hpp"

#include <gtest/gtest.h>

namespace conflux::offload {
namespace {

using std::chrono::milliseconds;

TEST(WindowMeter, WindowsEndOnTheIntervalAndOnBoundaries) {
  WindowMeter p(1.0, {3});
  const auto t0 = SteadyClock::now();
  const StepTimes s{.data_wait = 0.001, .compute = 0.004, .sync = 0.0005, .callbacks = 0.0001};
  EXPECT_FALSE(p.record(s, t0));
  EXPECT_FALSE(p.record(s, t0));
  EXPECT_TRUE(p.record(s, t0));  // the boundary at 3 steps
  PipelineCounters c;
  c.local_built = 4;
  c.local_build_seconds = 0.02;
  c.delivered = 3;
  c.wait_local_seconds = 0.002;
  c.wait_remote_seconds = 0.001;
  c.trainers = 2;
  c.workers = {{.live = true,
                .answers = 5,
                .last_build_seconds = 0.01,
                .total_build_seconds = 0.06,
                .last_busy_fraction = 0.7,
                .last_queued = 3}};
  const WindowReport w = p.close(c, 0.25, t0 + milliseconds(20));
  EXPECT_EQ(w.steps, 3u);
  EXPECT_NEAR(w.total.compute, 0.012, 1e-12);
  EXPECT_NEAR(w.local_build_rate, 200, 1e-9);
  EXPECT_EQ(w.delivered, 3u);
  EXPECT_NEAR(w.input.busy_s, 3 * 0.0046, 1e-12);
  EXPECT_NEAR(w.input.wait_local_s, 0.002, 1e-12);
  ASSERT_EQ(w.workers.size(), 1u);
  EXPECT_EQ(w.workers[0].answers, 5u);
  EXPECT_NEAR(w.workers[0].service_rate, 100, 1e-9);
  EXPECT_EQ(w.workers[0].queue_depth, 3u);
  EXPECT_NEAR(w.input.workers[0].build_seconds, 0.012, 1e-12);  // the window's mean
  EXPECT_EQ(w.input.trainers, 2);

  // The next window reports differences only; it ends on the interval.
  EXPECT_FALSE(p.record(s, t0 + milliseconds(500)));
  EXPECT_TRUE(p.record(s, t0 + milliseconds(1100)));
  c.local_built = 6;
  c.local_build_seconds = 0.03;
  c.workers[0].answers = 6;
  c.workers[0].total_build_seconds = 0.08;
  const WindowReport next = p.close(c, 0.25, t0 + milliseconds(1100));
  EXPECT_EQ(next.first_step, 3u);
  EXPECT_EQ(next.steps, 2u);
  EXPECT_EQ(next.local_built, 2u);
  EXPECT_EQ(next.workers[0].answers, 1u);
  EXPECT_NEAR(next.input.workers[0].build_seconds, 0.02, 1e-12);

  const std::string line = profile_json_line(next, 1);
  for (const char* key : {"\"trainer\": 1", "\"steps\": 2", "\"offload_ratio\": 0.25",
                          "\"queue_depth\": 3", "\"busy_fraction\": 0.7", "\"data_wait_ms\""}) {
    EXPECT_NE(line.find(key), std::string::npos) << key << " in " << line;
  }
}

}  // namespace
}  // namespace conflux::offload
