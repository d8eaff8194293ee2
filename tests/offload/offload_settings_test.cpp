#include "conflux/offload/offload_settings.hpp"

#include <gtest/gtest.h>

#include "../support/data_dir.hpp"
#include "conflux/config/config.hpp"

namespace conflux::offload {
namespace {

Config load(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "cluster.trainers=2");
  return load_config_file("configs/mnist_mlp.toml",
                          ConfigSources{overrides, testing::data_dir().string(), "test"});
}

TEST(OffloadSettings, StartRatioIsTheTrainersOwnOrTheCommonOne) {
  EXPECT_EQ(offload_settings(load({"data.offload_ratio=0.25"}), 1).start_ratio, 0.25);
  const Config each = load({"data.offload_ratio=0.25", "data.offload_ratios=[0.5, 0.75]"});
  EXPECT_EQ(offload_settings(each, 0).start_ratio, 0.5);
  EXPECT_EQ(offload_settings(each, 1).start_ratio, 0.75);
  EXPECT_FALSE(offload_settings(each, 1).automatic);
}

TEST(OffloadSettings, AutoStartsAtZeroAndTunesFromTheProfileSection) {
  const OffloadSettings s =
      offload_settings(load({"data.offload_ratio=auto", "profile.initial_steps=3",
                             "profile.steps=7", "profile.interval_s=0.25"}),
                       0);
  EXPECT_TRUE(s.automatic);
  EXPECT_EQ(s.start_ratio, 0.0);
  EXPECT_EQ(s.window_s, 0.25);
  EXPECT_EQ(s.window_ends, (std::vector<std::size_t>{3, 10}));
  EXPECT_EQ(s.controller.initial_steps, 3);
  EXPECT_EQ(s.controller.profile_steps, 7);
}

}  // namespace
}  // namespace conflux::offload
