#include "conflux/plan/fit.hpp"

#include <gtest/gtest.h>

#include <random>

#include "conflux/core/error.hpp"

namespace conflux::plan {
namespace {

// Points of T = a (B + b) / (M + m) + c on a grid, with multiplicative noise of `noise`.
std::vector<SweepPoint> grid(const TrainTimeModel& truth, double noise, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  std::vector<SweepPoint> pts;
  for (int memory : {256, 512, 1024, 1769}) {
    for (int batch : {16, 64, 256}) {
      SweepPoint p{.workers = 1, .memory_mb = memory, .batch = batch, .steps = 20};
      p.iteration_s = truth.seconds(batch, memory) * jitter(rng);
      p.transfer_s = 0.002 * std::pow(memory / 1000.0, -0.9) * jitter(rng);
      pts.push_back(p);
    }
  }
  return pts;
}

Sweep profile_of(std::vector<SweepPoint> points, std::uint64_t epoch_samples) {
  Sweep p;
  p.dataset = "mnist";
  p.epoch_samples = epoch_samples;
  p.gradient_mb = 1.2;
  p.points = std::move(points);
  return p;
}

TEST(PlanFit, RecoversFasdlCoefficientsFromExactPoints) {
  const TrainTimeModel truth{.a = 30.0, .b = 12.0, .m = 40.0};
  const TrainTimeModel fit = fit_train_time(grid(truth, 0, 1), false);
  EXPECT_NEAR(fit.a, truth.a, 1e-3 * truth.a);
  EXPECT_NEAR(fit.b, truth.b, 1e-2);
  EXPECT_NEAR(fit.m, truth.m, 0.5);
  EXPECT_EQ(fit.c, 0);
}

TEST(PlanFit, RecoversTheConstantOfTheAlternativeForm) {
  const TrainTimeModel truth{.a = 20.0, .b = 5.0, .m = 10.0, .c = 0.004};
  const TrainTimeModel fit = fit_train_time(grid(truth, 0, 2), true);
  EXPECT_NEAR(fit.a, truth.a, 1e-2 * truth.a);
  EXPECT_NEAR(fit.c, truth.c, 1e-4);
}

TEST(PlanFit, NoisyPointsFitWithinTheNoise) {
  const TrainTimeModel truth{.a = 30.0, .b = 12.0, .m = 40.0};
  const auto pts = grid(truth, 0.03, 3);
  const FitResult r = fit_sweep(profile_of(pts, 60000), TrainForm::kAuto, "test");
  EXPECT_LT(r.fasdl.quality.median_abs_error, 0.03);
  EXPECT_LT(r.fasdl.quality.loo_median_abs_error, 0.05);
  EXPECT_GT(r.fasdl.quality.r2, 0.99);
  EXPECT_FALSE(r.chose_constant);  // the data has no constant: FasDL's form is kept
  EXPECT_EQ(r.fasdl.quality.points.size(), pts.size());
  EXPECT_NEAR(r.model.transfer.k2, -0.9, 0.1);
  EXPECT_EQ(r.model.epoch_samples, 60000u);
}

TEST(PlanFit, OffersTheConstantFormWhenItFitsClearlyBetter) {
  // A large fixed cost per iteration: FasDL's form cannot bend to it.
  const TrainTimeModel truth{.a = 10.0, .b = 2.0, .m = 0.0, .c = 0.05};
  const FitResult r = fit_sweep(profile_of(grid(truth, 0.01, 4), 1000), TrainForm::kAuto, "test");
  EXPECT_TRUE(r.chose_constant);
  EXPECT_NE(r.choice.find("clearly better"), std::string::npos);
  EXPECT_NEAR(r.model.train.c, 0.05, 0.005);
  EXPECT_NE(render_fit_report(r).find("a(B+b)/(M+m) + c"), std::string::npos);
}

TEST(PlanFit, KeepsFixedWorkAndTheConstantNonNegative) {
  // Times with a negative constant: unconstrained, the constant form would predict negative
  // times for large functions, where the planner extrapolates.
  const TrainTimeModel truth{.a = 30.0, .b = 0.0, .m = 0.0, .c = -0.0005};
  const TrainTimeModel fit = fit_train_time(grid(truth, 0, 6), true);
  EXPECT_GE(fit.b, 0);
  EXPECT_GE(fit.c, 0);
  EXPECT_GT(fit.seconds(1, 10240), 0);
  EXPECT_GT(fit.m, -128);  // M + m > 0 down to Lambda's smallest size
}

TEST(PlanFit, TimesThatDoNotFallWithMemoryDoNotConverge) {
  std::vector<SweepPoint> pts;
  for (int memory : {256, 512, 1024}) {
    for (int batch : {16, 64}) {
      pts.push_back({.workers = 1,
                     .memory_mb = memory,
                     .batch = batch,
                     .steps = 5,
                     .iteration_s = 0.001 * batch});
    }
  }
  try {
    fit_train_time(pts, false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did not converge"), std::string::npos) << e.what();
  }
}

TEST(PlanFit, TooFewPointsAreAClearError) {
  std::vector<SweepPoint> pts{{.workers = 1, .memory_mb = 256, .batch = 16, .iteration_s = 0.1},
                              {.workers = 1, .memory_mb = 512, .batch = 16, .iteration_s = 0.05}};
  EXPECT_THROW(fit_train_time(pts, false), InputError);
  EXPECT_THROW(fit_transfer_time({pts[0]}), InputError);
  EXPECT_THROW(fit_sweep(Sweep{}, TrainForm::kAuto, "empty.toml"), InputError);
}

// With build times the fit adds T_c from the compute times and P(B) = p0 + p1 B; without them
// it says why there are none.
TEST(PlanFit, FitsTheComputeAloneAndTheInputCost) {
  const TrainTimeModel truth{.a = 40, .b = 10, .m = 30, .c = 0};
  const TrainTimeModel compute{.a = 15, .b = 4, .m = 30, .c = 0};
  std::vector<SweepPoint> pts = grid(truth, 0, 1);
  for (SweepPoint& p : pts) p.compute_s = compute.seconds(p.batch, p.memory_mb);
  Sweep sweep = profile_of(pts, 60000);
  const FitResult none = fit_sweep(sweep, TrainForm::kFasdl, "p.toml");
  EXPECT_FALSE(none.model.prices_input());
  EXPECT_NE(none.input_note.find("no batch-build times"), std::string::npos);
  EXPECT_NE(render_fit_report(none).find("no batch-build times"), std::string::npos);
  sweep.builds = {{.batch = 16, .batches = 50, .seconds = 0.001 + 16 * 0.0002},
                  {.batch = 64, .batches = 20, .seconds = 0.001 + 64 * 0.0002},
                  {.batch = 256, .batches = 5, .seconds = 0.001 + 256 * 0.0002}};
  const FitResult r = fit_sweep(sweep, TrainForm::kFasdl, "p.toml");
  ASSERT_TRUE(r.model.prices_input()) << r.input_note;
  EXPECT_NEAR(r.model.compute.a, 15, 1e-6 * 15);
  EXPECT_NEAR(r.model.compute.b, 4, 1e-4);
  EXPECT_NEAR(r.model.input.p0, 0.001, 1e-9);
  EXPECT_NEAR(r.model.input.p1, 0.0002, 1e-10);
  const std::string report = render_fit_report(r);
  EXPECT_NE(report.find("T_c (compute alone"), std::string::npos) << report;
  EXPECT_NE(report.find("B 64 measured 13.80 ms, fitted 13.80 ms"), std::string::npos) << report;
  // One batch size (once or twice): a line through the origin.
  sweep.builds.resize(1);
  EXPECT_NEAR(fit_sweep(sweep, TrainForm::kFasdl, "p.toml").model.input.p1, 0.0042 / 16, 1e-12);
  sweep.builds.push_back({.batch = 16, .batches = 40, .seconds = 0.0044});
  const InputCostModel twice = fit_sweep(sweep, TrainForm::kFasdl, "p.toml").model.input;
  EXPECT_EQ(twice.p0, 0);
  EXPECT_NEAR(twice.p1 * 16, 0.0043, 1e-4);
}

// Profiled at 1 and 2 BLAS threads: each count gets its own T_train; points above threads x
// mb_per_vcpu (where the threads cannot use the share) are left out and counted.
TEST(PlanFit, FitsEachProfiledThreadCount) {
  const TrainTimeModel one{.a = 40, .b = 10, .m = 30, .c = 0};
  const TrainTimeModel two{.a = 42, .b = 10, .m = 30, .c = 0};
  std::vector<SweepPoint> pts = grid(one, 0, 1);
  for (SweepPoint& p : pts) p.threads = 1;
  SweepPoint flat{.workers = 1, .memory_mb = 3000, .batch = 64, .threads = 1, .steps = 20};
  flat.iteration_s = one.seconds(64, 1769);  // one thread cannot use 3000 MB
  flat.transfer_s = 0.001;
  pts.push_back(flat);
  for (int memory : {512, 1024, 2048, 3538}) {
    for (int batch : {16, 256}) {
      SweepPoint p{.workers = 1, .memory_mb = memory, .batch = batch, .threads = 2, .steps = 20};
      p.iteration_s = two.seconds(batch, memory);
      p.transfer_s = 0.001;
      pts.push_back(p);
    }
  }
  const FitResult r = fit_sweep(profile_of(pts, 60000), TrainForm::kFasdl, "p.toml");
  EXPECT_EQ(r.model.train_threads, 1);
  EXPECT_NEAR(r.model.train.a, 40, 1e-6 * 40);
  ASSERT_EQ(r.model.more_threads.size(), 1u);
  EXPECT_EQ(r.model.more_threads[0].threads, 2);
  EXPECT_NEAR(r.model.more_threads[0].train.a, 42, 1e-6 * 42);
  EXPECT_EQ(r.model.measured_threads(), (std::vector<int>{1, 2}));
  EXPECT_EQ(&r.model.train_at(2), &r.model.more_threads[0].train);
  EXPECT_EQ(&r.model.train_at(1), &r.model.train);
  EXPECT_EQ(r.beyond_share, 1u);
  EXPECT_EQ(r.model.train_loo_errors.size(), 12u + 8u);  // both counts' held-out errors
  const std::string report = render_fit_report(r);
  EXPECT_NE(report.find("T_train at 2 BLAS threads = a(B+b)/(M+m): a = 42"), std::string::npos)
      << report;
  EXPECT_NE(report.find("1 point(s) above threads x 1769 MB left out"), std::string::npos)
      << report;
  // Points without a recorded thread count (an older profile) do not mix with counted ones.
  pts.front().threads = 0;
  EXPECT_THROW(fit_sweep(profile_of(pts, 60000), TrainForm::kFasdl, "p.toml"), InputError);
}

TEST(PlanFit, SyncTableAveragesBatchesPerWorkerCountAndMemory) {
  auto pts = grid(TrainTimeModel{.a = 30.0, .b = 12.0, .m = 40.0}, 0, 5);
  for (auto p : std::vector<SweepPoint>(pts)) {
    p.workers = 2;
    p.sync_s = 0.001 * (p.batch == 16 ? 1 : 3);
    pts.push_back(p);
  }
  const FitResult r = fit_sweep(profile_of(pts, 10), TrainForm::kFasdl, "test");
  ASSERT_EQ(r.model.sync.rows.size(), 1u);
  EXPECT_EQ(r.model.sync.rows[0].workers, 2);
  EXPECT_EQ(r.model.sync.rows[0].memory_mb.size(), 4u);
  EXPECT_NEAR(r.model.sync.rows[0].seconds[0], (0.001 + 0.003 + 0.003) / 3, 1e-12);
}

}  // namespace
}  // namespace conflux::plan
