#include "conflux/data/service/batch_loader.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "../../support/synthetic_dataset.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

InMemorySplit small_dataset(std::size_t n) {
  return testing::synthetic_dataset(
      n, {1, 6, 6}, [](std::size_t i) { return static_cast<std::uint8_t>(i * 31 + 7); });
}

TEST(BatchLoader, WithoutWorkersDeliversThePlanInOrderAcrossEpochs) {
  const InMemorySource dataset(small_dataset(23));
  const SampleTransform transform({1, 6, true, {0.5f}, {0.25f}}, dataset.info().shape);
  BatchLoaderOptions o;
  o.source = &dataset;
  o.transform = &transform;
  o.seed = 3;
  o.epochs = 3;
  o.global_batch = 5;  // 5 steps per epoch, the last with 3 samples
  o.trainers = 2;
  o.trainer = 1;
  o.threads = 2;
  o.prefetch = 3;
  offload::RemoteSchedule all_remote(1);
  o.schedule = &all_remote;  // no workers: still built locally
  BatchLoader loader(std::move(o));
  ASSERT_EQ(loader.steps_per_epoch(), 5u);
  BatchBuilder reference(dataset, transform, 1);
  model::Tensor images;
  std::vector<model::Label> labels;
  for (std::uint32_t epoch = 0; epoch < 3; ++epoch) {
    const EpochPlan plan(3, epoch, dataset.size(), 5, 2);
    for (std::size_t step = 0; step < 5; ++step) {
      const Batch& batch = loader.next();
      ASSERT_EQ(batch.epoch, epoch);
      ASSERT_EQ(batch.step, step);
      EXPECT_EQ(batch.origin, BatchOrigin::kLocal);
      const auto want = plan.samples(step, 1);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), batch.samples.begin(), batch.samples.end()));
      reference.build_train(want, 3, epoch, images, labels);
      ASSERT_EQ(batch.images.shape, images.shape);
      EXPECT_EQ(
          std::memcmp(batch.images.data.data(), images.data.data(), images.size() * sizeof(float)),
          0);
      EXPECT_EQ(batch.labels, labels);
    }
  }
  EXPECT_THROW(loader.next(), RuntimeError);
  loader.finish();
  const LoaderStats stats = loader.stats();
  EXPECT_EQ(stats.local, 15u);
  EXPECT_EQ(stats.worker + stats.fallback + stats.client.requests, 0u);
  EXPECT_LE(stats.peak_batches_in_flight, 3u);
}

TEST(BatchLoader, StoppingEarlyIsClean) {
  const InMemorySource dataset(small_dataset(40));
  const SampleTransform transform({0, 0, false, {0.0f}, {1.0f}}, dataset.info().shape);
  BatchLoaderOptions o;
  o.source = &dataset;
  o.transform = &transform;
  o.epochs = 5;
  o.global_batch = 4;
  o.prefetch = 4;
  BatchLoader loader(std::move(o));
  loader.next();
  loader.next();
  loader.finish();  // batches still being built are dropped; the producer thread is joined
  EXPECT_EQ(loader.stats().local, 2u);
}

}  // namespace
}  // namespace conflux::data
