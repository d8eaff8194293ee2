#include "conflux/model/lr_schedule.hpp"

#include <gtest/gtest.h>

#include "conflux/core/error.hpp"

namespace conflux::model {
namespace {

using Kind = LrSchedule::Kind;

LrSchedule make(Kind kind, double peak, std::size_t total, std::size_t warmup) {
  return LrSchedule({.kind = kind,
                     .peak_lr = peak,
                     .total_steps = total,
                     .warmup_steps = warmup,
                     .step_size = 0,
                     .milestones = {}});
}

TEST(LrSchedule, ConstantStaysAtPeak) {
  const LrSchedule s = make(Kind::kConstant, 0.05, 100, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 0.05);
  EXPECT_DOUBLE_EQ(s.at(99), 0.05);
}

TEST(LrSchedule, CosineDecaysFromPeakToZero) {
  const LrSchedule s = make(Kind::kCosine, 0.1, 101, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_NEAR(s.at(50), 0.05, 1e-12);
  EXPECT_NEAR(s.at(100), 0.0, 1e-12);
  for (std::size_t i = 1; i < 101; ++i) EXPECT_LT(s.at(i), s.at(i - 1));
}

TEST(LrSchedule, WarmupRampsLinearly) {
  const LrSchedule s = make(Kind::kCosine, 0.2, 110, 10);
  EXPECT_NEAR(s.at(0), 0.02, 1e-12);
  EXPECT_NEAR(s.at(9), 0.2, 1e-12);
  EXPECT_NEAR(s.at(10), 0.2, 1e-12);
  EXPECT_THROW(LrSchedule::parse_kind("cosin"), InputError);
}

TEST(LrSchedule, StepDecaysAtEveryMultiple) {
  // StepLR(step_size=10, gamma=0.5) after 4 warm-up steps, counted from step 0.
  const LrSchedule s({.kind = Kind::kStep,
                      .peak_lr = 0.1,
                      .warmup_steps = 4,
                      .step_size = 10,
                      .milestones = {},
                      .gamma = 0.5});
  EXPECT_NEAR(s.at(0), 0.025, 1e-15);
  EXPECT_NEAR(s.at(3), 0.1, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(4), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 0.1);
  EXPECT_DOUBLE_EQ(s.at(10), 0.05);
  EXPECT_DOUBLE_EQ(s.at(19), 0.05);
  EXPECT_DOUBLE_EQ(s.at(20), 0.025);
  EXPECT_DOUBLE_EQ(s.at(35), 0.0125);
}

TEST(LrSchedule, MultiStepDecaysAtEachMilestone) {
  // MultiStepLR(milestones=[5, 8], gamma=0.1): bisect_right, so the milestone step is decayed.
  const LrSchedule s({.kind = Kind::kMultiStep, .peak_lr = 0.1, .milestones = {5, 8}});
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(4), 0.1);
  EXPECT_NEAR(s.at(5), 0.01, 1e-17);
  EXPECT_NEAR(s.at(7), 0.01, 1e-17);
  EXPECT_NEAR(s.at(8), 0.001, 1e-18);
  EXPECT_NEAR(s.at(1000), 0.001, 1e-18);
}

TEST(LrSchedule, FromConfigReadsTheTrainSection) {
  TrainSection train;
  train.lr = 0.4;
  train.lr_schedule = "multistep";
  train.lr_milestones = {3, 6};
  train.lr_gamma = 0.5;
  train.warmup_steps = 2;
  const LrSchedule s = LrSchedule::from_config(train, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 0.2);
  EXPECT_DOUBLE_EQ(s.at(2), 0.4);
  EXPECT_DOUBLE_EQ(s.at(3), 0.2);
  EXPECT_DOUBLE_EQ(s.at(6), 0.1);
  train.lr_schedule = "cosine";
  train.lr_milestones.clear();
  const LrSchedule c = LrSchedule::from_config(train, 12);  // 10 steps after warm-up
  EXPECT_DOUBLE_EQ(c.at(2), 0.4);
  EXPECT_NEAR(c.at(11), 0.0, 1e-15);
}

}  // namespace
}  // namespace conflux::model
