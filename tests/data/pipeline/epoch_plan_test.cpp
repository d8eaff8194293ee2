#include "conflux/data/pipeline/epoch_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <vector>

#include "conflux/core/error.hpp"

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

// The split as the plan computed it before BatchSplit existed: equal batches, the first
// (n mod T) trainers one sample more.
BatchRange old_equal_range(std::size_t n, int trainers, int t) {
  const auto tt = static_cast<std::size_t>(t), w = static_cast<std::size_t>(trainers);
  const std::size_t base = n / w, extra = n % w;
  const std::size_t begin = tt * base + std::min(tt, extra);
  return {begin, begin + base + (tt < extra ? 1 : 0)};
}

TEST(BatchSplit, EqualSplitIsUnchanged) {
  for (std::size_t b : {1u, 5u, 64u, 127u, 128u}) {
    for (int w = 1; w <= 7; ++w) {
      if (b < static_cast<std::size_t>(w)) continue;
      // Bn = 0, and Bn equal to what equal batches give the non-aggregators, are both equal.
      std::vector<BatchSplit> splits = {BatchSplit(b, w)};
      for (int k = 1; k < w; ++k) {
        if (b % static_cast<std::size_t>(w) <= static_cast<std::size_t>(k)) {
          splits.emplace_back(b, w, k, b / static_cast<std::size_t>(w));
        }
        splits.emplace_back(b, w, k, 0);
      }
      for (const BatchSplit& split : splits) {
        EXPECT_TRUE(split.equal());
        for (std::size_t n = 0; n <= b; ++n) {
          for (int t = 0; t < w; ++t) {
            const BatchRange a = split.within_step(n, t), o = old_equal_range(n, w, t);
            ASSERT_EQ(a.begin, o.begin) << b << " " << w << " " << n << " " << t;
            ASSERT_EQ(a.end, o.end) << b << " " << w << " " << n << " " << t;
          }
        }
      }
    }
  }
}

TEST(BatchSplit, UnequalFullStepGivesBnToNonAggregators) {
  // 4 trainers, K = 1: the non-aggregators take 40 each, the aggregator the other 8.
  const BatchSplit one(128, 4, 1, 40);
  EXPECT_FALSE(one.equal());
  EXPECT_EQ(one.full_batch(0), 8u);
  for (int t = 1; t < 4; ++t) EXPECT_EQ(one.full_batch(t), 40u);
  // K = 3 of 4, Bn = 20: the aggregators share 108 as equal batches do (36 each).
  const BatchSplit three(128, 4, 3, 20);
  for (int t = 0; t < 3; ++t) EXPECT_EQ(three.full_batch(t), 36u);
  EXPECT_EQ(three.full_batch(3), 20u);
  // Remainders go to the first aggregators: 100 - 2 * 33 = 34 over 3 -> 12, 11, 11.
  const BatchSplit odd(100, 5, 3, 33);
  EXPECT_EQ(odd.full_batch(0), 12u);
  EXPECT_EQ(odd.full_batch(1), 11u);
  EXPECT_EQ(odd.full_batch(2), 11u);
  EXPECT_EQ(odd.full_batch(3), 33u);
  EXPECT_EQ(odd.within_step(100, 3).begin, 34u);
  EXPECT_EQ(odd.within_step(100, 4).end, 100u);
  // The aggregators need at least one sample each.
  EXPECT_NO_THROW(BatchSplit(128, 4, 2, 63));
  EXPECT_THROW(BatchSplit(128, 4, 2, 64), RuntimeError);
  // K = W: no non-aggregators, Bn has nothing to size.
  EXPECT_TRUE(BatchSplit(128, 4, 4, 7).equal());
}

TEST(BatchSplit, ShortStepsStayContiguousAndWithinTheFullBatches) {
  for (const BatchSplit& split : {BatchSplit(128, 2, 1, 80), BatchSplit(128, 4, 1, 40),
                                  BatchSplit(100, 5, 3, 33), BatchSplit(10, 3, 1, 4)}) {
    const std::size_t b = split.global_batch();
    for (std::size_t n = 0; n <= b; ++n) {
      std::size_t next = 0;
      for (int t = 0; t < split.trainers(); ++t) {
        const BatchRange r = split.within_step(n, t);
        ASSERT_EQ(r.begin, next) << n << " samples, trainer " << t;
        ASSERT_LE(r.size(), split.max_batch(t)) << n << " samples, trainer " << t;
        next = r.end;
      }
      ASSERT_EQ(next, n);
    }
  }
  // In proportion: half a step of 48 + 80 gives 24 + 40.
  const BatchSplit half(128, 2, 1, 80);
  EXPECT_EQ(half.within_step(64, 0).size(), 24u);
  EXPECT_EQ(half.within_step(64, 1).size(), 40u);
}

TEST(EpochPlan, UnequalBatchesUseEverySampleOnceInTrainerOrder) {
  const BatchSplit split(128, 3, 1, 50);  // 28 + 50 + 50
  const EpochPlan plan(9, 2, 1001, split), equal(9, 2, 1001, 128, 3);
  EXPECT_TRUE(std::equal(plan.order().begin(), plan.order().end(), equal.order().begin()));
  ASSERT_EQ(plan.steps(), 8u);
  std::multiset<std::uint32_t> seen;
  for (std::size_t s = 0; s < plan.steps(); ++s) {
    EXPECT_EQ(plan.range(s, 0).begin, plan.step_range(s).begin);
    EXPECT_EQ(plan.range(s, 2).end, plan.step_range(s).end);
    for (int t = 0; t < 3; ++t) {
      if (t > 0) {
        EXPECT_EQ(plan.range(s, t).begin, plan.range(s, t - 1).end);
      }
      for (auto i : plan.samples(s, t)) seen.insert(i);
    }
  }
  EXPECT_EQ(plan.range(0, 0).size(), 28u);
  EXPECT_EQ(plan.range(0, 1).size(), 50u);
  EXPECT_EQ(plan.step_samples(7), 1001u - 7 * 128);
  ASSERT_EQ(seen.size(), 1001u);
  for (std::uint32_t i = 0; i < 1001; ++i) ASSERT_EQ(seen.count(i), 1u);
}

}  // namespace
}  // namespace conflux::data

namespace conflux::data {
namespace {

// The epoch plan at ImageNet's size (docs/datasets.md, "Streaming and memory bounds"): 4 bytes
// per sample, a permutation, built in well under a second (printed, not asserted: timing).
TEST(EpochPlanScale, ImageNetSizedPlanIsFourBytesPerSample) {
  constexpr std::size_t kImageNet = 1281167;
  const auto start = std::chrono::steady_clock::now();
  const EpochPlan plan(42, 3, kImageNet, 1024, 8);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(plan.order().size_bytes(), 4 * kImageNet);
  std::vector<bool> seen(kImageNet, false);
  for (const std::uint32_t s : plan.order()) {
    ASSERT_LT(s, kImageNet);
    ASSERT_FALSE(seen[s]) << "sample " << s << " twice";
    seen[s] = true;
  }
  std::printf("epoch plan of %zu samples: %.1f MiB, built in %.3f s\n", kImageNet,
              static_cast<double>(plan.order().size_bytes()) / (1 << 20), seconds);
}

}  // namespace
}  // namespace conflux::data
