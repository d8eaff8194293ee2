#include "conflux/model/lr_schedule.hpp"

#include <gtest/gtest.h>

#include "conflux/core/error.hpp"

namespace conflux::model {
namespace {

TEST(LrSchedule, ConstantStaysAtPeak) {
  const LrSchedule s(LrSchedule::Kind::kConstant, 0.05, 100, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 0.05);
  EXPECT_DOUBLE_EQ(s.at(99), 0.05);
}

TEST(LrSchedule, CosineDecaysFromPeakToZero) {
  const LrSchedule s(LrSchedule::Kind::kCosine, 0.1, 101, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_NEAR(s.at(50), 0.05, 1e-12);
  EXPECT_NEAR(s.at(100), 0.0, 1e-12);
  for (std::size_t i = 1; i < 101; ++i) EXPECT_LT(s.at(i), s.at(i - 1));
}

TEST(LrSchedule, WarmupRampsLinearly) {
  const LrSchedule s(LrSchedule::Kind::kCosine, 0.2, 110, 10);
  EXPECT_NEAR(s.at(0), 0.02, 1e-12);
  EXPECT_NEAR(s.at(9), 0.2, 1e-12);
  EXPECT_NEAR(s.at(10), 0.2, 1e-12);
  EXPECT_THROW(LrSchedule::parse_kind("cosin"), InputError);
}

}  // namespace
}  // namespace conflux::model
