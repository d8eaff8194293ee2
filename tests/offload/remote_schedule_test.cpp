#include "conflux/offload/remote_schedule.hpp"

#include <gtest/gtest.h>

#include <string>

namespace conflux::offload {
namespace {

std::string pattern(RemoteSchedule& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s.next_is_remote() ? 'R' : 'L';
  return out;
}

TEST(RemoteSchedule, RatioIsTheShareOfRemoteBatchesSpreadEvenly) {
  RemoteSchedule half(0.5);
  EXPECT_EQ(pattern(half, 6), "LRLRLR");
  RemoteSchedule none(0.0), all(1.0), quarter(0.25);
  EXPECT_EQ(pattern(none, 4), "LLLL");
  EXPECT_EQ(pattern(all, 4), "RRRR");
  EXPECT_EQ(pattern(quarter, 8), "LLLRLLLR");
}

TEST(RemoteSchedule, InexactRatiosLoseNoBatchToRounding) {
  RemoteSchedule tenth(0.1);
  int remote = 0;
  for (int i = 0; i < 1000; ++i) remote += tenth.next_is_remote();
  EXPECT_EQ(remote, 100);
}

TEST(RemoteSchedule, RatioChangesApplyToLaterBatchesAndAreClamped) {
  RemoteSchedule s(0.0);
  EXPECT_EQ(pattern(s, 3), "LLL");
  s.set_ratio(1.0);
  EXPECT_EQ(pattern(s, 3), "RRR");
  s.set_ratio(2.0);
  EXPECT_EQ(s.ratio(), 1.0);
  s.set_ratio(-1.0);
  EXPECT_EQ(s.ratio(), 0.0);
  EXPECT_EQ(pattern(s, 2), "LL");
}

TEST(RemoteSchedule, RestoredStateContinuesTheSameSequence) {
  RemoteSchedule first(0.3);
  EXPECT_EQ(pattern(first, 5), "LLLRL");
  const ScheduleState saved = first.state();
  EXPECT_EQ(saved.ratio, 0.3);
  RemoteSchedule resumed;  // e.g. a new run, restored from the checkpoint
  EXPECT_EQ(resumed.ratio(), 0.0);
  resumed.restore(saved);
  EXPECT_EQ(pattern(resumed, 10), pattern(first, 10));
  resumed.restore({.ratio = 1.5, .credit = 0.25});
  EXPECT_EQ(resumed.ratio(), 1.0);
  EXPECT_EQ(resumed.state().credit, 0.25);
}

}  // namespace
}  // namespace conflux::offload
