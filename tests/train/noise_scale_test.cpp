// The gradient noise scale estimator against synthetic gradients whose true |G|^2 and
// tr(Sigma) are known: per-sample gradients g = G + noise, noise ~ N(0, sigma^2 I).

#include "conflux/train/noise_scale.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace conflux::train {
namespace {

struct Truth {
  double norm2;
  double trace;
};

// Simulates `steps` data-parallel steps of `trainers` x `per_trainer` samples in `dim`
// dimensions and feeds the estimator what trainers would measure.
Truth simulate(NoiseScaleEstimator& est, int trainers, int per_trainer, int steps, double sigma) {
  const int dim = 64;
  std::mt19937_64 gen(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> mean(dim);
  for (double& m : mean) m = 0.05 * normal(gen);
  double norm2 = 0;
  for (double m : mean) norm2 += m * m;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> big(dim, 0.0);
    double small_sum = 0;
    for (int t = 0; t < trainers; ++t) {
      std::vector<double> g(dim, 0.0);
      for (int i = 0; i < per_trainer; ++i)
        for (int d = 0; d < dim; ++d) g[d] += mean[d] + sigma * normal(gen);
      double n2 = 0;
      for (int d = 0; d < dim; ++d) {
        big[d] += g[d];
        g[d] /= per_trainer;
        n2 += g[d] * g[d];
      }
      small_sum += n2;
    }
    double big_n2 = 0;
    for (double v : big) big_n2 += (v / (trainers * per_trainer)) * (v / (trainers * per_trainer));
    est.add({.small_norm2 = small_sum / trainers,
             .big_norm2 = big_n2,
             .small_batch = static_cast<double>(per_trainer),
             .big_batch = static_cast<double>(trainers * per_trainer)});
  }
  return {norm2, dim * sigma * sigma};
}

TEST(NoiseScale, RecoversTheTrueTraceAndGradientNorm) {
  for (const auto [trainers, per_trainer] : {std::pair{2, 16}, std::pair{4, 8}}) {
    NoiseScaleEstimator est;
    const Truth truth = simulate(est, trainers, per_trainer, 4000, 0.1);
    EXPECT_EQ(est.steps(), 4000u);
    EXPECT_NEAR(est.trace() / truth.trace, 1.0, 0.03) << trainers << " x " << per_trainer;
    EXPECT_NEAR(est.gradient_norm2() / truth.norm2, 1.0, 0.1) << trainers << " x " << per_trainer;
    EXPECT_NEAR(est.noise_scale() / (truth.trace / truth.norm2), 1.0, 0.12);
  }
}

TEST(NoiseScale, MoreNoiseGivesALargerNoiseScale) {
  NoiseScaleEstimator quiet, noisy;
  simulate(quiet, 2, 16, 2000, 0.05);
  simulate(noisy, 2, 16, 2000, 0.2);
  EXPECT_GT(noisy.noise_scale(), 8.0 * quiet.noise_scale());  // 16x the variance
}

TEST(NoiseScale, UnusableStepsAreIgnoredAndAnEmptyEstimateIsNaN) {
  NoiseScaleEstimator est;
  EXPECT_TRUE(std::isnan(est.noise_scale()));
  est.add({.small_norm2 = 1, .big_norm2 = 0.5, .small_batch = 8, .big_batch = 8});  // one trainer
  est.add({.small_norm2 = NAN, .big_norm2 = 0.5, .small_batch = 8, .big_batch = 16});
  EXPECT_EQ(est.steps(), 0u);
  // Noise only (G = 0): |G|^2 estimates average to about 0, so no finite noise scale.
  est.add({.small_norm2 = 1.0, .big_norm2 = 0.5, .small_batch = 8, .big_batch = 16});
  EXPECT_EQ(est.steps(), 1u);
  EXPECT_DOUBLE_EQ(est.gradient_norm2(), 0.0);
  EXPECT_DOUBLE_EQ(est.trace(), 0.5 / (1.0 / 8 - 1.0 / 16));
  EXPECT_TRUE(std::isnan(est.noise_scale()));
  est.reset();
  EXPECT_EQ(est.steps(), 0u);
}

}  // namespace
}  // namespace conflux::train
