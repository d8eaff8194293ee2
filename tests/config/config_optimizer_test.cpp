// The cross-key rules of the optimisers and learning-rate schedules (train.*), and the keys the
// GPU path does not implement.

#include <gtest/gtest.h>

#include "../support/config_text.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/error.hpp"

namespace conflux {
namespace {

Config load(std::vector<std::string> overrides) {
  return testing::load_with(testing::kMinimalConfig, std::move(overrides));
}

void expect_error(std::vector<std::string> overrides, std::vector<std::string> parts) {
  const std::string e = testing::load_error(testing::kMinimalConfig, std::move(overrides));
  for (const std::string& part : parts) EXPECT_NE(e.find(part), std::string::npos) << e;
}

TEST(ConfigOptimizer, AcceptsEachOptimiserAndSchedule) {
  const Config c =
      load({"train.optimizer=adamw", "train.weight_decay=0.05", "train.adam_beta2=0.98",
            "train.lr_schedule=multistep", "train.lr_milestones=[100, 150]",
            "train.warmup_steps=100", "train.label_smoothing=0.1", "train.clip_grad_norm=1.0"});
  EXPECT_EQ(c.train().optimizer, "adamw");
  EXPECT_EQ(c.train().lr_milestones, (std::vector<float>{100, 150}));
  EXPECT_DOUBLE_EQ(c.train().adam_beta2, 0.98);
  EXPECT_NO_THROW(load({"train.nesterov=true", "train.momentum=0.9", "train.lr_schedule=step",
                        "train.lr_step_size=30"}));
  // Every optimiser, label smoothing and clipping run on the GPU too: "gpu" accepts them.
  EXPECT_NO_THROW(load({"train.device=\"gpu\"", "train.optimizer=adamw",
                        "train.label_smoothing=0.1", "train.clip_grad_norm=5"}));
}

TEST(ConfigOptimizer, RejectsMomentumKeysThatDoNotApply) {
  expect_error({"train.nesterov=true"}, {"--set train.nesterov=true", "train.momentum > 0"});
  expect_error({"train.optimizer=adam", "train.momentum=0.9"},
               {"train.momentum = 0.9 applies to sgd only", "train.adam_beta1"});
  expect_error({"train.optimizer=adam", "train.nesterov=true"}, {"train.nesterov"});
  expect_error({"train.optimizer=rmsprop"}, {"train.optimizer", "adamw"});
}

TEST(ConfigOptimizer, RejectsInconsistentSchedules) {
  expect_error({"train.lr_schedule=step"}, {"train.lr_step_size = 0", "needs a step size"});
  expect_error({"train.lr_step_size=10"}, {"applies only to train.lr_schedule = \"step\""});
  expect_error({"train.lr_schedule=step", "train.lr_step_size=10", "train.warmup_steps=20"},
               {"shorter than train.warmup_steps = 20"});
  expect_error({"train.lr_schedule=multistep"}, {"train.lr_milestones is empty"});
  expect_error({"train.lr_milestones=[10]"}, {"applies only to train.lr_schedule"});
  expect_error({"train.lr_schedule=multistep", "train.lr_milestones=[10, 10]"},
               {"--set train.lr_milestones", "must increase", "entry 1 (10) follows 10"});
  expect_error({"train.lr_schedule=multistep", "train.lr_milestones=[10.5]"}, {"not a whole step"});
  expect_error({"train.lr_schedule=multistep", "train.lr_milestones=[10]", "train.warmup_steps=11"},
               {"inside the warm-up"});
  expect_error({"train.lr_schedule=multistep", "train.lr_milestones=[0]"}, {"lr_milestones"});
  expect_error({"train.label_smoothing=1.0"}, {"train.label_smoothing"});
  expect_error({"train.lr_gamma=0"}, {"train.lr_gamma"});
}

// The GPU path runs every optimiser, clipping and the noise scale (gpu::DeviceOptimizer):
// train.device = "gpu" accepts them.
TEST(ConfigOptimizer, GpuDeviceAcceptsEveryOptimiserAndOption) {
  EXPECT_NO_THROW(load({"train.device=gpu", "train.optimizer=adam"}));
  EXPECT_NO_THROW(load({"train.device=gpu", "train.clip_grad_norm=1"}));
  EXPECT_NO_THROW(load({"train.device=gpu", "train.noise_scale=true"}));
  EXPECT_NO_THROW(load({"train.device=gpu", "train.lr_schedule=multistep",
                        "train.lr_milestones=[5]", "train.momentum=0.9"}));
}

}  // namespace
}  // namespace conflux
