#include "conflux/core/cpu_throttle.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "conflux/core/error.hpp"

namespace conflux {
namespace {

// Burns `cpu_seconds` of this thread's CPU time; returns the wall time it took.
double burn(double cpu_seconds) {
  const auto thread_cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  const auto start = std::chrono::steady_clock::now();
  const double begin = thread_cpu();
  volatile double sink = 0;
  while (thread_cpu() - begin < cpu_seconds) {
    for (int i = 0; i < 10000; ++i) sink = sink + 1e-9 * i;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(CpuThrottle, HoldsOneBusyThreadToItsShare) {
  CpuThrottle throttle({.share = 0.25, .period = std::chrono::milliseconds(20)});
  const double wall = burn(0.2);
  // Unthrottled this takes ~0.2 s; at a quarter vCPU ~0.8 s. A loaded machine can only make it
  // slower, so the bound that fails when throttling breaks is the lower one.
  EXPECT_GT(wall, 0.2 / 0.25 * 0.8);
  const CpuThrottleStats stats = throttle.stats();
  EXPECT_GT(stats.pauses, 5u);
  EXPECT_LT(stats.cpu_seconds / stats.wall_seconds, 0.25 * 1.25);
}

TEST(CpuThrottle, SharesTheBudgetAmongThreads) {
  CpuThrottle throttle({.share = 0.5, .period = std::chrono::milliseconds(20)});
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) threads.emplace_back([] { burn(0.1); });
  for (auto& t : threads) t.join();
  const CpuThrottleStats stats = throttle.stats();
  // Two threads, 0.2 s of CPU in all at half a vCPU: about 0.4 s of wall time.
  EXPECT_GT(stats.wall_seconds, 0.2 / 0.5 * 0.8);
  EXPECT_LT(stats.cpu_seconds / stats.wall_seconds, 0.5 * 1.25);
}

TEST(CpuThrottle, SetShareChangesTheRate) {
  CpuThrottle throttle({.share = 0.2});
  burn(0.05);
  throttle.set_share(0.8);
  EXPECT_DOUBLE_EQ(throttle.share(), 0.8);
  const double wall = burn(0.16);
  EXPECT_GT(wall, 0.16 / 0.8 * 0.8);
  EXPECT_LT(wall, 0.16 / 0.2);  // the old share would take 0.8 s
}

TEST(CpuThrottle, IdleTimeDoesNotBankABurst) {
  CpuThrottle throttle({.share = 0.25, .period = std::chrono::milliseconds(20)});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // 300 ms idle at a quarter vCPU would bank 75 ms of CPU without the cap of one period.
  const double wall = burn(0.075);
  EXPECT_GT(wall, 0.075 / 0.25 * 0.7);
}

TEST(CpuThrottle, RejectsBadSettingsAndASecondThrottle) {
  EXPECT_THROW(CpuThrottle({.share = 0}), RuntimeError);
  CpuThrottle first({.share = 1});
  EXPECT_THROW(CpuThrottle({.share = 1}), RuntimeError);
  EXPECT_THROW(first.set_share(-1), RuntimeError);
}

}  // namespace
}  // namespace conflux
