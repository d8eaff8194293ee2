// comm::GradientBuckets: layers grouped in backward order into contiguous buckets of about the
// bucket size, each bucket reported once, when its last layer finishes.

#include "conflux/comm/gradient_buckets.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "conflux/core/error.hpp"

namespace conflux::comm {
namespace {

// Six layers as a model lays them out (parameters in layer order; two without any).
const std::vector<GradientRange> kLayers{{0, 10}, {10, 10}, {10, 30}, {30, 35}, {35, 35}, {35, 65}};
const std::vector<std::size_t> kBackward{5, 4, 3, 2, 1, 0};

TEST(GradientBuckets, GroupsAdjacentLayersInBackwardOrderUpToTheSize) {
  const GradientBuckets buckets(kLayers, kBackward, 25);
  // Layer 5 fills a bucket alone; 3 and 2 make 25; layer 0 starts the last.
  const std::vector<GradientRange> want{{35, 65}, {10, 35}, {0, 10}};
  EXPECT_EQ(buckets.buckets(), want);
  std::size_t covered = 0;
  for (const GradientRange& b : buckets.buckets()) covered += b.size();
  EXPECT_EQ(covered, 65u);  // every gradient in exactly one bucket
}

TEST(GradientBuckets, ABucketCompletesWithItsLastLayerOncePerPass) {
  GradientBuckets buckets(kLayers, kBackward, 25);
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(buckets.layer_done(5), (GradientRange{35, 65}));
    EXPECT_FALSE(buckets.layer_done(4));  // no parameters
    EXPECT_FALSE(buckets.layer_done(3));  // its bucket waits for layer 2
    EXPECT_EQ(buckets.layer_done(2), (GradientRange{10, 35}));
    EXPECT_FALSE(buckets.layer_done(1));
    EXPECT_EQ(buckets.layer_done(0), (GradientRange{0, 10}));
    EXPECT_THROW(buckets.layer_done(0), RuntimeError);  // finished twice in one pass
    buckets.reset();
  }
}

TEST(GradientBuckets, NonAdjacentRangesNeverShareABucket) {
  // An order that is not the layout's reverse: layer 0 after layer 5 is not adjacent.
  const std::vector<std::size_t> order{5, 0, 4, 3, 2, 1};
  const GradientBuckets buckets(kLayers, order, 1000);
  const std::vector<GradientRange> want{{35, 65}, {0, 10}, {10, 35}};
  EXPECT_EQ(buckets.buckets(), want);
}

TEST(GradientBuckets, RefusesAnOrderThatIsNotAPermutation) {
  EXPECT_THROW(GradientBuckets(kLayers, std::vector<std::size_t>{5, 4, 3, 2, 1}, 25), RuntimeError);
  EXPECT_THROW(GradientBuckets(kLayers, std::vector<std::size_t>{5, 5, 3, 2, 1, 0}, 25),
               RuntimeError);
}

}  // namespace
}  // namespace conflux::comm
