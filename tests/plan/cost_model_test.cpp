#include "conflux/plan/cost_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "../support/s3_table.hpp"
#include "../support/temp_dir.hpp"

namespace conflux::plan {
namespace {

using testing::expect_input_error;

const S3TransferTable& s3() {
  return testing::s3_table();
}

PerformanceModel model() {
  PerformanceModel m;
  m.train = {.a = 2, .b = 4, .m = 24, .c = 0.5};
  m.transfer = {.k1 = 3, .k2 = -0.5};
  m.gradient_mb = 8;
  m.epoch_samples = 1000;
  m.mb_per_vcpu = 1000;
  m.sync.rows.push_back({.workers = 4, .memory_mb = {1024, 2048}, .seconds = {0.2, 0.1}});
  return m;
}

TEST(CostModel, LambdaIterationIsTheSlowerRoleOfKReduce) {
  const PerformanceModel m = model();
  // 2 threads: 1024 MB (1.02 vCPU) is below the cap, so T_train is the fit's own value.
  const CostModel cost(CostModelOptions{.model = &m, .epochs = 2, .threads = 2, .s3 = &s3()});
  const Candidate c{.workers = 5,
                    .memory_mb = 1024,
                    .aggregators = 2,
                    .aggregator_batch = 32,
                    .nonaggregator_batch = 64};
  const Prediction p = cost.predict(c);
  // S = 2 x 32 + 3 x 64 = 256; ceil(1000 / 256) = 4 per epoch.
  EXPECT_EQ(p.samples_per_iteration, 256u);
  EXPECT_EQ(p.iterations, 8u);
  const double up = s3().upload_seconds(1024, 4), down = s3().download_seconds(1024, 4);
  const double trans = 3 / 32.0;
  const double agg = m.train.seconds(32, 1024) + trans + 2 * up + 4 * down + up + 2 * down;
  const double non = m.train.seconds(64, 1024) + trans + 2 * up + 2 * down;
  EXPECT_DOUBLE_EQ(p.aggregator_s, agg);
  EXPECT_DOUBLE_EQ(p.nonaggregator_s, non);
  EXPECT_DOUBLE_EQ(p.iteration_s, std::max(agg, non));
  EXPECT_DOUBLE_EQ(p.transfer_s, trans);
  EXPECT_DOUBLE_EQ(p.total_s, 8 * std::max(agg, non));
  const PricesSection prices;
  EXPECT_DOUBLE_EQ(p.compute_cost_usd, 5 * 1.0 * p.total_s * prices.lambda_x86_gb_s);
  EXPECT_DOUBLE_EQ(p.request_cost_usd,
                   5 * std::ceil(p.total_s / prices.lambda_max_seconds) * prices.lambda_request);
  // PUT: 5 x 2 chunks + 2 merged; GET: 2 x 4 copies + 5 x 2 merged chunks.
  EXPECT_DOUBLE_EQ(p.storage_cost_usd, 8 * (12 * prices.object_put + 18 * prices.object_get));
  EXPECT_DOUBLE_EQ(p.cost_usd, p.compute_cost_usd + p.request_cost_usd + p.storage_cost_usd);
}

TEST(CostModel, ABigNonAggregatorBatchMakesNonAggregatorsTheCriticalRole) {
  const PerformanceModel m = model();
  const CostModel cost(CostModelOptions{.model = &m, .threads = 2, .s3 = &s3()});
  const Prediction p = cost.predict({5, 1024, 2, 16, 1024});
  EXPECT_GT(p.nonaggregator_s, p.aggregator_s);
  EXPECT_EQ(p.iteration_s, p.nonaggregator_s);
  EXPECT_EQ(p.train_s, m.train.seconds(1024, 1024));
  EXPECT_DOUBLE_EQ(p.comm_s, 2 * s3().upload_seconds(1024, 4) + 2 * s3().download_seconds(1024, 4));
}

TEST(CostModel, AllAggregatorsHaveNoNonAggregatorRole) {
  const PerformanceModel m = model();
  const CostModel cost(CostModelOptions{.model = &m, .s3 = &s3()});
  const Prediction p = cost.predict({4, 2048, 4, 64, 64});
  EXPECT_EQ(p.nonaggregator_s, 0);
  EXPECT_EQ(p.iteration_s, p.aggregator_s);
  EXPECT_EQ(p.samples_per_iteration, 256u);
  const double up = s3().upload_seconds(2048, 2), down = s3().download_seconds(2048, 2);
  EXPECT_DOUBLE_EQ(p.comm_s, 5 * up + 7 * down);
}

TEST(CostModel, RequestsAreChargedPerMaximumFunctionDuration) {
  const PerformanceModel m = model();
  PricesSection prices;
  prices.lambda_max_seconds = 1;  // every second of the run is a new invocation per worker
  const CostModel cost(CostModelOptions{.model = &m, .prices = prices, .s3 = &s3()});
  const Prediction p = cost.predict({3, 512, 1, 32, 32});
  EXPECT_DOUBLE_EQ(p.request_cost_usd, 3 * std::ceil(p.total_s) * prices.lambda_request);
}

// One compute thread uses one vCPU: more memory buys no speed beyond mb_per_vcpu, only cost.
TEST(CostModel, TrainTimeStopsFallingAtTheThreadsShare) {
  const PerformanceModel m = model();  // mb_per_vcpu = 1000
  const CostModel one(CostModelOptions{.model = &m, .target = Target::kSlurm});
  const CostModel four(CostModelOptions{.model = &m, .target = Target::kSlurm, .threads = 4});
  EXPECT_EQ(one.compute_cap_mb(), 1000);
  EXPECT_EQ(one.train_seconds(64, 3000), m.train.seconds(64, 1000));
  EXPECT_EQ(one.train_seconds(64, 800), m.train.seconds(64, 800));
  EXPECT_EQ(four.train_seconds(64, 3000), m.train.seconds(64, 3000));
  const Candidate at_cap{4, 1000, 4, 64, 64};
  const Candidate above{4, 3000, 4, 64, 64};
  EXPECT_EQ(one.predict(above).train_s, one.predict(at_cap).train_s);
  EXPECT_GT(one.predict(above).cost_usd, one.predict(at_cap).cost_usd);
  EXPECT_LT(four.predict(above).train_s, four.predict(at_cap).train_s);
  expect_input_error([&] { CostModel(CostModelOptions{.model = &m, .threads = 0}); },
                     {"compute threads must be at least 1, got 0"});
}

TEST(CostModel, ArmUsesItsOwnGbSecondPrice) {
  const PerformanceModel m = model();
  const CostModel x86(CostModelOptions{.model = &m, .s3 = &s3()});
  const CostModel arm(CostModelOptions{.model = &m, .arch = LambdaArch::kArm, .s3 = &s3()});
  const Candidate c{2, 1536, 1, 64, 128};
  const PricesSection prices;
  EXPECT_DOUBLE_EQ(
      arm.predict(c).compute_cost_usd,
      x86.predict(c).compute_cost_usd / prices.lambda_x86_gb_s * prices.lambda_arm_gb_s);
  EXPECT_EQ(arm.predict(c).total_s, x86.predict(c).total_s);
}

TEST(CostModel, SlurmIterationAddsTheMeasuredSyncAndPaysCoreHours) {
  const PerformanceModel m = model();
  const CostModel cost(
      CostModelOptions{.model = &m, .target = Target::kSlurm, .epochs = 3, .threads = 2});
  const Prediction p = cost.predict({4, 1500, 4, 50, 50});
  EXPECT_EQ(cost.cores(1500), 2);
  EXPECT_EQ(cost.cores(1000), 1);
  EXPECT_EQ(cost.cores(1001), 2);
  EXPECT_EQ(p.iterations, 3u * 5u);  // S = 200
  const double sync = 0.2 + (0.1 - 0.2) * (1500 - 1024) / 1024.0;
  EXPECT_DOUBLE_EQ(p.comm_s, sync);
  // No serialisation term: MPI allreduce works on the gradient in place.
  EXPECT_EQ(p.transfer_s, 0);
  EXPECT_DOUBLE_EQ(p.iteration_s, m.train.seconds(50, 1500) + sync);
  EXPECT_DOUBLE_EQ(p.cost_usd, 4 * 2 * (p.total_s / 3600) * PricesSection{}.slurm_core_hour);
  EXPECT_EQ(p.storage_cost_usd, 0);
  EXPECT_EQ(p.request_cost_usd, 0);
  // One worker needs no sync and no measurement.
  EXPECT_EQ(cost.predict({1, 1500, 1, 50, 50}).comm_s, 0);
  expect_input_error([&] { cost.predict({3, 1500, 3, 50, 50}); }, {"3 trainers", "measured: 4"});
}

TEST(CostModel, ValidateRejectsImpossibleCandidates) {
  const PerformanceModel m = model();
  const CostModel lambda(CostModelOptions{.model = &m, .s3 = &s3()});
  const CostModel slurm(CostModelOptions{.model = &m, .target = Target::kSlurm});
  const PlanSpace space;
  EXPECT_NO_THROW(lambda.validate({4, 1024, 2, 32, 64}, space));
  EXPECT_NO_THROW(lambda.validate({4, 1024, 4, 32, 32}, space));
  expect_input_error([&] { lambda.validate({4, 1024, 0, 32, 32}, space); }, {"K = 0", "1..W = 4"});
  expect_input_error([&] { lambda.validate({4, 1024, 5, 32, 32}, space); }, {"K = 5"});
  expect_input_error(
      [&] {
        lambda.validate({4, 1024, 2, 64, 32}, space);
      },
      {"Bn = 32", "smaller", "Ba = 64"});
  expect_input_error(
      [&] {
        lambda.validate({4, 1024, 4, 32, 64}, space);
      },
      {"K = W = 4", "must equal"});
  expect_input_error(
      [&] {
        lambda.validate({4, 100, 2, 32, 32}, space);
      },
      {"memory 100 MB", "128..10240"});
  expect_input_error([&] { lambda.validate({65, 1024, 2, 32, 32}, space); }, {"W = 65", "1..64"});
  expect_input_error([&] { lambda.validate({4, 1024, 2, 0, 32}, space); }, {"at least 1"});
  expect_input_error(
      [&] {
        slurm.validate({4, 1024, 2, 32, 32}, space);
      },
      {"allreduce", "K must equal W = 4"});
  // predict() checks everything but the space.
  expect_input_error([&] { lambda.predict({4, 1024, 5, 32, 32}); }, {"K = 5"});
}

TEST(CostModel, RejectsIncompleteOptions) {
  const PerformanceModel m = model();
  expect_input_error([] { CostModel(CostModelOptions{}); }, {"needs a performance model"});
  expect_input_error([&] { CostModel(CostModelOptions{.model = &m}); }, {"S3 transfer table"});
  expect_input_error([&] { CostModel(CostModelOptions{.model = &m, .epochs = 0, .s3 = &s3()}); },
                     {"epochs must be at least 1, got 0"});
  PricesSection negative;
  negative.object_get = -1;
  expect_input_error(
      [&] { CostModel(CostModelOptions{.model = &m, .prices = negative, .s3 = &s3()}); },
      {"prices", "-1"});
  PerformanceModel empty = m;
  empty.epoch_samples = 0;
  expect_input_error([&] { CostModel(CostModelOptions{.model = &empty, .s3 = &s3()}); },
                     {"no training samples"});
  // SLURM needs neither the S3 table nor a gradient size.
  PerformanceModel no_gradient = m;
  no_gradient.gradient_mb = 0;
  EXPECT_NO_THROW(CostModel(CostModelOptions{.model = &no_gradient, .target = Target::kSlurm}));
}

}  // namespace
}  // namespace conflux::plan
