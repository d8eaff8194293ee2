#include "conflux/data/epoch_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace conflux::data {
namespace {

TEST(EpochPlan, IsAPermutationThatDependsOnSeedAndEpochOnly) {
  const EpochPlan a(1, 0, 1000, 128, 2), b(1, 0, 1000, 128, 3), c(1, 1, 1000, 128, 2),
      d(2, 0, 1000, 128, 2);
  std::vector<std::uint32_t> sorted(a.order().begin(), a.order().end());
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_TRUE(std::equal(a.order().begin(), a.order().end(), b.order().begin()));
  EXPECT_FALSE(std::equal(a.order().begin(), a.order().end(), c.order().begin()));
  EXPECT_FALSE(std::equal(a.order().begin(), a.order().end(), d.order().begin()));
}

TEST(EpochPlan, EverySampleExactlyOnceForAnyTrainerCount) {
  for (int trainers : {1, 2, 3, 4, 7}) {
    for (std::size_t n : {1000u, 1001u, 127u, 5u}) {
      const EpochPlan plan(9, 3, n, 128, trainers);
      if (n < static_cast<std::size_t>(trainers)) continue;
      std::multiset<std::uint32_t> seen;
      for (std::size_t s = 0; s < plan.steps(); ++s) {
        std::size_t in_step = 0;
        for (int t = 0; t < trainers; ++t) {
          for (auto i : plan.samples(s, t)) seen.insert(i);
          in_step += plan.range(s, t).size();
          EXPECT_EQ(plan.batch_index(s, t) % trainers, static_cast<std::size_t>(t));
        }
        EXPECT_EQ(in_step, plan.step_samples(s));
      }
      ASSERT_EQ(seen.size(), n) << trainers << " trainers, " << n << " samples";
      for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(seen.count(i), 1u);
    }
  }
}

TEST(EpochPlan, OneTrainerAndTwoTrainersSeeTheSameSamplesPerStep) {
  const EpochPlan one(5, 0, 1000, 128, 1), two(5, 0, 1000, 128, 2);
  ASSERT_EQ(one.steps(), two.steps());
  EXPECT_EQ(one.steps(), 8u);  // ceil(1000 / 128): the short last step is kept
  EXPECT_EQ(one.step_samples(7), 1000u - 7 * 128);
  for (std::size_t s = 0; s < one.steps(); ++s) {
    std::vector<std::uint32_t> joined(two.samples(s, 0).begin(), two.samples(s, 0).end());
    joined.insert(joined.end(), two.samples(s, 1).begin(), two.samples(s, 1).end());
    const auto single = one.samples(s, 0);
    ASSERT_TRUE(std::equal(single.begin(), single.end(), joined.begin(), joined.end()));
  }
  EXPECT_EQ(two.range(0, 0).size(), 64u);
  EXPECT_EQ(two.range(7, 0).size() + two.range(7, 1).size(), 104u);
}

}  // namespace
}  // namespace conflux::data
