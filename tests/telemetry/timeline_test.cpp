// The recording side of the timeline, without MPI: the merged file is covered by
// tests/mpi/timeline_test.cpp.
#include "conflux/telemetry/timeline.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace conflux::telemetry {
namespace {

TimelineOptions options(bool enabled, std::size_t max_events = 500000) {
  TimelineOptions o;
  o.enabled = enabled;
  o.max_events = max_events;
  return o;
}

// One event of each kind, plus a thread name (which is not an event).
void record_one_of_each(Timeline& t) {
  t.name_thread("main");
  const auto now = SteadyClock::now();
  t.span("step", "train", now, now + std::chrono::microseconds(5), R"({"step": 1})");
  t.instant("decision", "control");
  t.counter("offload ratio", 0.25);
}

TEST(Timeline, DisabledRecordsNothing) {
  Timeline t(options(false));
  EXPECT_FALSE(t.enabled());
  record_one_of_each(t);
  { ScopedSpan span(t, "scoped", "test"); }
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.dropped(), 0u);
}

TEST(Timeline, EnabledRecordsEveryKindButNotThreadNames) {
  Timeline t(options(true));
  EXPECT_TRUE(t.enabled());
  record_one_of_each(t);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.dropped(), 0u);
}

TEST(Timeline, StoresAtMostMaxEventsAndCountsTheRestAsDropped) {
  Timeline t(options(true, 4));
  for (int i = 0; i < 10; ++i) t.instant("tick", "test");
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.dropped(), 6u);
  t.counter("c", 1.0);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.dropped(), 7u);
}

TEST(Timeline, ZeroMaxEventsDropsEverything) {
  Timeline t(options(true, 0));
  record_one_of_each(t);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.dropped(), 3u);
}

TEST(Timeline, RecordsFromManyThreadsWithoutLosingEvents) {
  Timeline t(options(true));
  constexpr int kThreads = 8;
  constexpr int kEach = 2000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&t, i] {
      t.name_thread("worker " + std::to_string(i));
      for (int j = 0; j < kEach; ++j) {
        const auto now = SteadyClock::now();
        t.span("work", "test", now, now);
        if (j % 100 == 0) t.counter("progress", j);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), static_cast<std::size_t>(kThreads * (kEach + kEach / 100)));
  EXPECT_EQ(t.dropped(), 0u);
}

TEST(Timeline, BoundHoldsUnderConcurrentRecording) {
  Timeline t(options(true, 1000));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&t] {
      for (int j = 0; j < 700; ++j) t.instant("tick", "test");
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), 1000u);
  EXPECT_EQ(t.dropped(), 1800u);
}

// The per-thread track cache must not leak from one Timeline into the next one, including a
// later Timeline allocated at the same address.
TEST(Timeline, ThreadsMayAlternateBetweenTimelines) {
  for (int round = 0; round < 3; ++round) {
    Timeline a(options(true));
    Timeline b(options(true));
    std::thread other([&] {
      a.instant("a", "test");
      b.instant("b", "test");
      a.name_thread("other");
    });
    a.instant("a", "test");
    b.instant("b", "test");
    a.instant("a", "test");
    other.join();
    EXPECT_EQ(a.size(), 3u);
    EXPECT_EQ(b.size(), 2u);
  }
}

TEST(Timeline, AcceptsReversedIntervalsAndNonFiniteCounters) {
  Timeline t(options(true));
  const auto now = SteadyClock::now();
  t.span("backwards", "test", now, now - std::chrono::milliseconds(1), "not an object");
  t.counter("nan", std::nan(""));
  EXPECT_EQ(t.size(), 2u);
}

TEST(TimelineScopedSpan, RecordsOneSpanWhenEnabled) {
  Timeline t(options(true));
  {
    ScopedSpan outer(t, "outer", "test");
    ScopedSpan inner(t, "inner", "test");
    EXPECT_EQ(t.size(), 0u);  // recorded at destruction
  }
  EXPECT_EQ(t.size(), 2u);
}

}  // namespace
}  // namespace conflux::telemetry
