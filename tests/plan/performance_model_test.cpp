#include "conflux/plan/performance_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "../support/temp_dir.hpp"

namespace conflux::plan {
namespace {

using testing::expect_input_error;

TEST(PerformanceModel, TransferTimeIsAPowerLaw) {
  const TransferTimeModel t{.k1 = 3, .k2 = -0.5};
  EXPECT_DOUBLE_EQ(t.seconds(1024), 3 / 32.0);
  EXPECT_DOUBLE_EQ((TransferTimeModel{.k1 = 2, .k2 = 1}).seconds(100), 200);
  EXPECT_EQ((TransferTimeModel{}).seconds(512), 0);
}

TEST(PerformanceModel, TrainTimeFollowsItsFormula) {
  const TrainTimeModel t{.a = 2, .b = 4, .m = 24, .c = 0.5};
  EXPECT_DOUBLE_EQ(t.seconds(60, 1000), 2 * 64 / 1024.0 + 0.5);
}

SyncTimeTable table() {
  SyncTimeTable s;
  s.rows.push_back({.workers = 2, .memory_mb = {512, 1024, 2048}, .seconds = {0.4, 0.2, 0.1}});
  s.rows.push_back({.workers = 4, .memory_mb = {1024}, .seconds = {0.3}});
  return s;
}

TEST(PerformanceModel, SyncTimeInterpolatesInMemoryAndClamps) {
  const SyncTimeTable s = table();
  EXPECT_EQ(s.seconds(2, 512), 0.4);
  EXPECT_EQ(s.seconds(2, 1024), 0.2);
  EXPECT_EQ(s.seconds(2, 2048), 0.1);
  EXPECT_DOUBLE_EQ(s.seconds(2, 768), 0.3);
  EXPECT_DOUBLE_EQ(s.seconds(2, 1280), 0.175);
  EXPECT_EQ(s.seconds(2, 128), 0.4);
  EXPECT_EQ(s.seconds(2, 10240), 0.1);
  EXPECT_EQ(s.seconds(4, 128), 0.3);
  EXPECT_EQ(s.seconds(4, 5000), 0.3);
}

TEST(PerformanceModel, OneWorkerNeverSynchronises) {
  EXPECT_EQ(SyncTimeTable{}.seconds(1, 1024), 0);
  EXPECT_EQ(table().seconds(1, 1024), 0);
}

TEST(PerformanceModel, UnmeasuredWorkerCountsAreInputErrors) {
  const SyncTimeTable s = table();
  expect_input_error([&] { s.seconds(3, 1024); }, {"3 trainers", "measured: 2, 4"});
  expect_input_error([] { SyncTimeTable{}.seconds(8, 1024); }, {"8 trainers", "measured: none"});
}

TEST(PerformanceModel, MaxWorkersIsTheLargestMeasuredCount) {
  EXPECT_EQ(table().max_workers(), 4);
  EXPECT_EQ(SyncTimeTable{}.max_workers(), 1);
}

}  // namespace
}  // namespace conflux::plan
