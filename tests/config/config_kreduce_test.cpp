// The cross-key rules of K-Reduce's unequal batches (comm.* against cluster.trainers and
// train.batch_size).

#include <gtest/gtest.h>

#include "../support/config_text.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/error.hpp"

namespace conflux {
namespace {

const std::string kConfig = std::string(testing::kMinimalConfig) + R"(
[cluster]
trainers = 4
[train]
batch_size = 128
[comm]
strategy = "kreduce"
)";

Config load(std::vector<std::string> overrides) {
  return testing::load_with(kConfig, std::move(overrides), "kreduce.toml");
}

std::string error_of(std::vector<std::string> overrides) {
  return testing::load_error(kConfig, std::move(overrides), "kreduce.toml");
}

TEST(ConfigKReduce, AcceptsUnequalBatchesThatLeaveEveryAggregatorASample) {
  const Config c = load(
      {"comm.aggregators=2", "comm.nonaggregator_batch_size=63", "comm.stale_nonaggregators=true"});
  EXPECT_EQ(c.comm().aggregators, 2);
  EXPECT_EQ(c.comm().nonaggregator_batch_size, 63);
  EXPECT_TRUE(c.comm().stale_nonaggregators);
  EXPECT_NO_THROW(load({"comm.aggregators=1", "comm.nonaggregator_batch_size=42"}));
  // Stale non-aggregators with K = W: there are none, nothing to reject.
  EXPECT_NO_THROW(load({"comm.stale_nonaggregators=true"}));
}

TEST(ConfigKReduce, RejectsANonAggregatorBatchThatStarvesTheAggregators) {
  // 2 x 64 of 128 leaves 0 for 2 aggregators; at most 63 each.
  const std::string e = error_of({"comm.aggregators=2", "comm.nonaggregator_batch_size=64"});
  for (const char* part : {"comm.nonaggregator_batch_size = 64", "train.batch_size = 128",
                           "comm.aggregators = 2", "at most 63"}) {
    EXPECT_NE(e.find(part), std::string::npos) << "'" << part << "' not in: " << e;
  }
  EXPECT_NE(error_of({"comm.aggregators=1", "comm.nonaggregator_batch_size=43"}), "(accepted)");
}

TEST(ConfigKReduce, RejectsANonAggregatorBatchWithoutNonAggregators) {
  for (const char* k : {"comm.aggregators=0", "comm.aggregators=4"}) {
    const std::string e = error_of({k, "comm.nonaggregator_batch_size=16"});
    EXPECT_NE(e.find("every trainer is an aggregator"), std::string::npos) << e;
    EXPECT_NE(e.find("comm.nonaggregator_batch_size"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace conflux
