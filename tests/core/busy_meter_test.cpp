#include "conflux/core/busy_meter.hpp"

#include "conflux/core/error.hpp"

#include <gtest/gtest.h>

namespace conflux {
namespace {

using std::chrono::milliseconds;

TEST(BusyMeter, FractionOfTheWindowCoveredByBusyIntervals) {
  BusyMeter meter(1.0);
  const auto t0 = SteadyClock::now();
  EXPECT_EQ(meter.busy_fraction(t0), 0);
  meter.record(t0, t0 + milliseconds(100));
  meter.record(t0 + milliseconds(200), t0 + milliseconds(300));
  // 200 ms busy since the first interval began 400 ms ago.
  EXPECT_NEAR(meter.busy_fraction(t0 + milliseconds(400)), 0.5, 1e-9);
  // Later the window is the last second: [1.3 s, 2.3 s] holds nothing.
  EXPECT_NEAR(meter.busy_fraction(t0 + milliseconds(2300)), 0, 1e-9);
  meter.record(t0 + milliseconds(2300), t0 + milliseconds(3050));
  // [2.05 s, 3.05 s]: 750 ms busy.
  EXPECT_NEAR(meter.busy_fraction(t0 + milliseconds(3050)), 0.75, 1e-9);
  // An interval cut by the window's start counts only its part inside.
  EXPECT_NEAR(meter.busy_fraction(t0 + milliseconds(3800)), 0.25, 1e-9);  // [2.8 s, 3.05 s]
}

TEST(BusyMeter, RejectsANonPositiveWindow) {
  EXPECT_THROW(BusyMeter(0.0), Error);
}

}  // namespace
}  // namespace conflux
