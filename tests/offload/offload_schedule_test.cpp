#include "conflux/offload/offload_schedule.hpp"

#include <gtest/gtest.h>

#include <string>

namespace conflux::offload {
namespace {

std::string pattern(OffloadSchedule& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s.next_is_remote() ? 'R' : 'L';
  return out;
}

TEST(OffloadSchedule, RatioIsTheShareOfRemoteBatchesSpreadEvenly) {
  OffloadSchedule half(0.5);
  EXPECT_EQ(pattern(half, 6), "LRLRLR");
  OffloadSchedule none(0.0), all(1.0), quarter(0.25);
  EXPECT_EQ(pattern(none, 4), "LLLL");
  EXPECT_EQ(pattern(all, 4), "RRRR");
  EXPECT_EQ(pattern(quarter, 8), "LLLRLLLR");
}

TEST(OffloadSchedule, InexactRatiosLoseNoBatchToRounding) {
  OffloadSchedule tenth(0.1);
  int remote = 0;
  for (int i = 0; i < 1000; ++i) remote += tenth.next_is_remote();
  EXPECT_EQ(remote, 100);
}

TEST(OffloadSchedule, RatioChangesApplyToLaterBatchesAndAreClamped) {
  OffloadSchedule s(0.0);
  EXPECT_EQ(pattern(s, 3), "LLL");
  s.set_ratio(1.0);
  EXPECT_EQ(pattern(s, 3), "RRR");
  s.set_ratio(2.0);
  EXPECT_EQ(s.ratio(), 1.0);
  s.set_ratio(-1.0);
  EXPECT_EQ(s.ratio(), 0.0);
  EXPECT_EQ(pattern(s, 2), "LL");
}

}  // namespace
}  // namespace conflux::offload
