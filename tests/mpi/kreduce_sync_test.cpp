// K-Reduce against MPI allreduce and against a sum in trainer order, over all ranks of the job
// (run at 2 and 4 ranks), for every aggregator count K = 1..W, synchronous and stale.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "conflux/comm/kreduce_sync.hpp"

namespace conflux::comm {
namespace {

constexpr std::chrono::seconds kTimeout{60};

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Trainer t's gradient element i at step s. Dyadic values (multiples of 1/16 up to 1) have
// exact sums in any order; random ones in [-1, 1) with full mantissas do not.
float gradient(int t, int step, std::size_t i, bool dyadic) {
  const std::uint64_t h =
      mix((static_cast<std::uint64_t>(t) << 48) ^ (static_cast<std::uint64_t>(step) << 32) ^ i);
  if (dyadic) return static_cast<float>(static_cast<int>(h % 33) - 16) / 16.0f;
  return static_cast<float>(static_cast<double>(h >> 11) * 0x1p-52 - 1.0);
}

std::vector<float> contribution(int t, int step, std::size_t size, bool dyadic) {
  std::vector<float> g(size);
  for (std::size_t i = 0; i < size; ++i) g[i] = gradient(t, step, i, dyadic);
  return g;
}

// The sum K-Reduce promises: trainer 0's value, plus trainer 1's, ... in float.
std::vector<float> rank_order_sum(int trainers, int step, std::size_t size, bool dyadic) {
  std::vector<float> sum = contribution(0, step, size, dyadic);
  for (int t = 1; t < trainers; ++t) {
    for (std::size_t i = 0; i < size; ++i) sum[i] += gradient(t, step, i, dyadic);
  }
  return sum;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class KReduce : public ::testing::Test {
 protected:
  Communicator ranks = Communicator::world().split(0, Communicator::world().rank());
  int w = ranks.size();
  int me = ranks.rank();
};

TEST_F(KReduce, DyadicGradientsEqualMpiAllreduceBitwiseForEveryK) {
  MpiAllreduceSync allreduce(ranks, kTimeout);
  for (std::size_t size : {std::size_t{2}, std::size_t{1001}}) {
    for (int k = 1; k <= w; ++k) {
      KReduceSync kreduce(ranks, size, KReduceOptions{k, false, kTimeout});
      for (int step = 0; step < 3; ++step) {
        std::vector<float> expected = contribution(me, step, size, true);
        allreduce.sum(expected);
        std::vector<float> got = contribution(me, step, size, true);
        // exchange() on odd steps, sum() on even ones: both are synchronous here.
        if (step % 2 == 1) {
          EXPECT_EQ(kreduce.exchange(got), Merged::kCurrent);
        } else {
          kreduce.sum(got);
        }
        EXPECT_TRUE(bitwise_equal(got, expected))
            << "K = " << k << " of " << w << ", size " << size << ", step " << step;
        EXPECT_TRUE(bitwise_equal(got, rank_order_sum(w, step, size, true)));
      }
      EXPECT_FALSE(kreduce.drain(std::span<float>()));
    }
  }
}

TEST_F(KReduce, RandomGradientsEqualTheTrainerOrderSumBitwise) {
  MpiAllreduceSync allreduce(ranks, kTimeout);
  const std::size_t size = 4099;
  if (w >= 3) {  // the values are random enough that the order of a sum shows in its bits
    std::vector<float> reversed = contribution(w - 1, 0, size, false);
    for (int t = w - 2; t >= 0; --t) {
      for (std::size_t i = 0; i < size; ++i) reversed[i] += gradient(t, 0, i, false);
    }
    EXPECT_FALSE(bitwise_equal(reversed, rank_order_sum(w, 0, size, false)));
  }
  for (int k = 1; k <= w; ++k) {
    KReduceSync kreduce(ranks, size, KReduceOptions{k, false, kTimeout});
    for (int step = 0; step < 2; ++step) {
      std::vector<float> got = contribution(me, step, size, false);
      EXPECT_EQ(kreduce.exchange(got), Merged::kCurrent);
      EXPECT_TRUE(bitwise_equal(got, rank_order_sum(w, step, size, false)))
          << "K = " << k << " of " << w << ", step " << step;
      if (w == 2) {  // a sum of two is the same in either order: MPI's too
        std::vector<float> expected = contribution(me, step, size, false);
        allreduce.sum(expected);
        EXPECT_TRUE(bitwise_equal(got, expected)) << "K = " << k << ", step " << step;
      }
    }
  }
}

TEST_F(KReduce, StaleNonAggregatorsApplyThePreviousStepsSumAndDrain) {
  const std::size_t size = 513;
  for (int k = 1; k < w; ++k) {
    KReduceSync kreduce(ranks, size, KReduceOptions{k, true, kTimeout});
    const bool aggregator = me < k;
    EXPECT_EQ(kreduce.is_aggregator(), aggregator);
    EXPECT_EQ(kreduce.stale(), !aggregator);
    EXPECT_NE(kreduce.name().find("stale non-aggregators"), std::string::npos) << kreduce.name();
    // Steps 0-2, a sync point, steps 3-4, a sync point.
    std::vector<float> g;
    for (int step = 0; step < 5; ++step) {
      g = contribution(me, step, size, false);
      const Merged merged = kreduce.exchange(g);
      const bool first_after_sync = step == 0 || step == 3;
      if (aggregator) {
        EXPECT_EQ(merged, Merged::kCurrent) << "K = " << k << ", step " << step;
        EXPECT_TRUE(bitwise_equal(g, rank_order_sum(w, step, size, false)));
      } else if (first_after_sync) {
        EXPECT_EQ(merged, Merged::kNone) << "K = " << k << ", step " << step;
      } else {
        EXPECT_EQ(merged, Merged::kPrevious) << "K = " << k << ", step " << step;
        EXPECT_TRUE(bitwise_equal(g, rank_order_sum(w, step - 1, size, false)));
      }
      if (step == 2 || step == 4) {
        const bool owed = kreduce.drain(g);
        EXPECT_EQ(owed, !aggregator) << "K = " << k << ", step " << step;
        if (owed) {
          EXPECT_TRUE(bitwise_equal(g, rank_order_sum(w, step, size, false)));
        }
      }
    }
    // A synchronous sum() after a drain: everyone waits for this step's sum.
    g = contribution(me, 9, size, false);
    kreduce.sum(g);
    EXPECT_TRUE(bitwise_equal(g, rank_order_sum(w, 9, size, false)));
  }
}

TEST_F(KReduce, NamesTheAggregatorCount) {
  const KReduceSync all(ranks, 10, KReduceOptions{0, true, kTimeout});
  EXPECT_EQ(all.aggregators(), w);
  EXPECT_FALSE(all.stale());  // everyone aggregates: nothing is stale
  EXPECT_EQ(all.name(), fmt::format("k-reduce (K={} of {})", w, w));
  const KReduceSync one(ranks, 10, KReduceOptions{1, false, kTimeout});
  EXPECT_EQ(one.name(), fmt::format("k-reduce (K=1 of {})", w));
}

}  // namespace
}  // namespace conflux::comm
