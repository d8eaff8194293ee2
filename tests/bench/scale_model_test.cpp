// docs/scaling.md's formulas: the allreduce algorithms' alpha-beta costs and the data service's
// fan-in and credits, on hand-computed cases.
#include "../../benchmarks/scale_model.hpp"

#include <gtest/gtest.h>

namespace conflux::bench::scale {
namespace {

Machine two_links(int per_host) {
  Machine m;
  m.net = {.alpha_s = 50e-6, .beta_s_per_byte = 3e-9};
  m.shm = {.alpha_s = 2e-6, .beta_s_per_byte = 0.5e-9};
  m.gamma_s_per_byte = 0.1e-9;
  m.per_host = per_host;
  return m;
}

TEST(ScaleModel, BinomialIsOneLevelUpAndDownPerDoubling) {
  const Machine m = two_links(1);
  const double n = 1 << 20;
  const double level = 2 * (50e-6 + n * 3e-9) + n * 0.1e-9;
  EXPECT_NEAR(binomial_s(2, n, m), level, 1e-12);
  EXPECT_NEAR(binomial_s(4096, n, m), 12 * level, 1e-9);
  EXPECT_NEAR(binomial_s(5, n, m), 3 * level, 1e-9);  // ceil(log2 5) levels
}

TEST(ScaleModel, BinomialTakesSharedMemoryForHopsWithinAHost) {
  const Machine m = two_links(2);  // ranks 0,1 on one host, 2,3 on the next
  const double n = 4096;
  const double shm = 2 * (2e-6 + n * 0.5e-9) + n * 0.1e-9;
  const double net = 2 * (50e-6 + n * 3e-9) + n * 0.1e-9;
  EXPECT_NEAR(binomial_s(4, n, m), shm + net, 1e-12);
  EXPECT_NEAR(binomial_s(2, n, m), shm, 1e-12);
}

TEST(ScaleModel, RingAndRabenseifnerMoveTwiceTheBufferWhateverTheRankCount) {
  const Machine m = two_links(1);
  const double n = 64 << 20;
  // 2(p-1)/p of the buffer each way: the bandwidth term tends to 2 n beta.
  EXPECT_NEAR(ring_s(2, n, m), 2 * (50e-6 + n / 2 * 3e-9) + n / 2 * 0.1e-9, 1e-12);
  EXPECT_LT(ring_s(4096, n, m), 2 * n * 3e-9 + n * 0.1e-9 + 2 * 4095 * 50e-6 + 1e-9);
  EXPECT_NEAR(rabenseifner_s(2, n, m), ring_s(2, n, m), 1e-12);
  EXPECT_LT(rabenseifner_s(4096, n, m), binomial_s(4096, n, m) / 5);
  EXPECT_EQ(ring_s(1, n, m), 0);
}

TEST(ScaleModel, FanInAndCreditsFollowRatesAndTheRoundTrip) {
  const Service s{.worker_samples_per_s = 4000,
                  .trainer_samples_per_s = 8000,
                  .ratio = 0.25,
                  .batch = 100,
                  .sample_bytes = 10000};
  const Link l{.alpha_s = 100e-6, .beta_s_per_byte = 1e-9};
  EXPECT_DOUBLE_EQ(fan_in_cpu(s), 2.0);               // 4000 / (0.25 x 8000)
  EXPECT_DOUBLE_EQ(fan_in_link(s, l), 1e5 / 2000.0);  // 1e5 samples/s over 2000 wanted
  // 1 MB payload: 1 chunk; alpha + 25 ms build + 2 alpha + 1 ms transfer = 26.3 ms.
  EXPECT_NEAR(request_round_trip_s(s, l), 0.0263, 1e-9);
  EXPECT_EQ(requests_in_flight(s, l), 1);      // 20 batches/s x 26.3 ms = 0.53
  EXPECT_EQ(worker_requests_needed(s, l), 2);  // the build plus one for 1.3 ms of latency
}

}  // namespace
}  // namespace conflux::bench::scale
