// GPU trainers in the cost model and planner: throughput = min(GPU ceiling, local input + the
// data workers' share), cost = GPU-hours x slurm_gpu_hour + worker cores x hours x
// slurm_core_hour. Synthetic models (no GPU needed): ceiling 2000 samples/s, local 100, one
// worker core 300 samples/s (P(B) = B / 300), batch 100, 600,000 samples, $2 per GPU-hour,
// $0.05 per core-hour.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <variant>

#include "../support/temp_dir.hpp"
#include "conflux/plan/fit.hpp"
#include "conflux/plan/fit_file.hpp"
#include "conflux/plan/plan_output.hpp"
#include "conflux/plan/planner.hpp"
#include "conflux/plan/sweep_data.hpp"

namespace conflux::plan {
namespace {

using testing::expect_input_error;

constexpr double kSamples = 600000;

PerformanceModel gpu_model(double ceiling, double local = 100, double per_core = 300) {
  PerformanceModel m;
  m.dataset = "synthetic";
  m.source = "synthetic GPU model";
  m.epoch_samples = static_cast<std::uint64_t>(kSamples);
  m.gpu.rates = {{.batch = 100, .ceiling_samples_s = ceiling, .local_samples_s = local}};
  m.input = {.p0 = 0, .p1 = 1.0 / per_core};  // P(B) = B / per_core
  return m;
}

CostModel gpu_cost(const PerformanceModel& m, int worker_threads = 1) {
  PricesSection prices;
  prices.slurm_gpu_hour = 2.0;
  prices.slurm_core_hour = 0.05;
  return CostModel(CostModelOptions{.model = &m,
                                    .prices = prices,
                                    .target = Target::kSlurm,
                                    .epochs = 1,
                                    .worker_threads = worker_threads});
}

PlanRequest gpu_request(double deadline, int max_gpus = 1, int max_data_workers = 16) {
  return PlanRequest{.deadline_s = deadline,
                     .alternatives = 3,
                     .space = {.min_workers = 1,
                               .max_workers = max_gpus,
                               .batch_sizes = {100},
                               .max_data_workers = max_data_workers}};
}

Candidate on_gpu(int data_workers, int gpus = 1) {
  return Candidate{.workers = gpus,
                   .memory_mb = 128,
                   .aggregators = gpus,
                   .aggregator_batch = 100,
                   .nonaggregator_batch = 100,
                   .data_workers = data_workers,
                   .threads = 1,
                   .gpu = true};
}

// The data workers the plan chooses for one GPU with ceiling `ceiling` and a loose deadline.
int chosen_workers(double ceiling) {
  const PerformanceModel m = gpu_model(ceiling);
  const CostModel cost = gpu_cost(m);
  const PlanResult r = plan(cost, gpu_request(1e6));
  EXPECT_TRUE(r.feasible);
  return r.ranked.front().first.data_workers;
}

TEST(GpuPlan, FeedIsTheLesserOfCeilingAndInput) {
  const PerformanceModel m = gpu_model(2000);
  const CostModel cost = gpu_cost(m);
  const CostModel::GpuFeed six = cost.gpu_feed(1, 6, 100);
  EXPECT_DOUBLE_EQ(six.workers, 1800);
  EXPECT_DOUBLE_EQ(six.rate, 1900);  // 100 + 6 x 300 < 2000
  EXPECT_TRUE(six.input_bound);
  EXPECT_DOUBLE_EQ(six.ratio, 1800.0 / 1900);  // all the workers can build
  const CostModel::GpuFeed seven = cost.gpu_feed(1, 7, 100);
  EXPECT_DOUBLE_EQ(seven.rate, 2000);  // 100 + 7 x 300 = 2200 >= 2000
  EXPECT_FALSE(seven.input_bound);
  EXPECT_DOUBLE_EQ(seven.ratio, 0.95);  // the least offloading that keeps the GPU busy
  const CostModel::GpuFeed none = cost.gpu_feed(1, 0, 100);
  EXPECT_DOUBLE_EQ(none.rate, 100);
  EXPECT_DOUBLE_EQ(none.ratio, 0);
  // Two threads per worker: each worker builds 600 samples/s.
  EXPECT_DOUBLE_EQ(gpu_cost(m, 2).gpu_feed(1, 3, 100).workers, 1800);
}

TEST(GpuPlan, CostIsGpuHoursPlusWorkerCoreHours) {
  const PerformanceModel m = gpu_model(2000);
  const CostModel cost = gpu_cost(m);
  const Prediction p = cost.predict(on_gpu(7));
  EXPECT_EQ(p.iterations, 6000u);
  EXPECT_DOUBLE_EQ(p.iteration_s, 0.05);  // 100 samples at 2000 samples/s
  EXPECT_DOUBLE_EQ(p.total_s, 300);
  EXPECT_DOUBLE_EQ(p.gpu_cost_usd, 300.0 / 3600 * 2.0);
  EXPECT_DOUBLE_EQ(p.compute_cost_usd, 7 * 300.0 / 3600 * 0.05);
  EXPECT_DOUBLE_EQ(p.cost_usd, 300.0 / 3600 * (2.0 + 7 * 0.05));
  EXPECT_FALSE(p.input_bound);
  const Prediction q = cost.predict(on_gpu(6));
  EXPECT_NEAR(q.total_s, kSamples / 1900, 1e-9);
  EXPECT_NEAR(q.cost_usd, kSamples / 1900 / 3600 * (2.0 + 6 * 0.05), 1e-12);
  EXPECT_TRUE(q.input_bound);
}

// While input-bound, one more worker costs 0.05 per hour and saves far more GPU time; once
// the GPU is fed, another only costs. The plan takes the least W that feeds the GPU, unless
// the W below it comes so close that its cheaper hour wins: (2 + 0.05 W) / rate(W) decides.
TEST(GpuPlan, ChoosesTheWorkersThatFeedTheGpuAtTheLeastCost) {
  EXPECT_EQ(chosen_workers(2000), 7);  // 6: 1900 < 2000; 7: 2200 >= 2000
  EXPECT_EQ(chosen_workers(2200), 7);  // exactly fed: 100 + 7 x 300 = 2200
  EXPECT_EQ(chosen_workers(1900), 6);  // exactly fed by 6
  // 6 workers feed 1900: they cost 2.3 / 1900 per sample, 7 cost 2.35 / G; 7 are cheaper from
  // G = 2.35 x 1900 / 2.3 = 1941.3 on.
  EXPECT_EQ(chosen_workers(1941), 6);
  EXPECT_EQ(chosen_workers(1942), 7);
  // 7 workers give 2200; 8 feed a GPU of G. 7 costs 2.35 / 2200 per sample, 8 costs 2.4 / G:
  // 8 is cheaper from G = 2.4 x 2200 / 2.35 = 2246.8 on.
  EXPECT_EQ(chosen_workers(2246), 7);
  EXPECT_EQ(chosen_workers(2247), 8);
  const PerformanceModel m = gpu_model(2246);
  const CostModel cost = gpu_cost(m);
  const PlanResult loose = plan(cost, gpu_request(1e6));
  EXPECT_TRUE(loose.ranked.front().second.input_bound);  // 7 at 2246: the input sets the pace
  // A deadline that 7 workers (2200 samples/s) miss takes 8 (2246 samples/s).
  const PlanResult tight = plan(cost, gpu_request(kSamples / 2246 * 1.001));
  ASSERT_TRUE(tight.feasible);
  EXPECT_EQ(tight.ranked.front().first.data_workers, 8);
  EXPECT_FALSE(tight.ranked.front().second.input_bound);
}

TEST(GpuPlan, DearCoresTakeTheFewestWorkersTheDeadlineAllows) {
  // At $10 per core-hour a worker costs more than the GPU time it saves (g R = 2 x 300 < c L =
  // 10 x 100): the plan takes as few as meet the deadline.
  const PerformanceModel m = gpu_model(2000);
  PricesSection prices;
  prices.slurm_gpu_hour = 2.0;
  prices.slurm_core_hour = 10;
  const CostModel cost(
      CostModelOptions{.model = &m, .prices = prices, .target = Target::kSlurm, .epochs = 1});
  // 1000 s needs 600 samples/s: 100 + 2 x 300 = 700 (1 worker gives 400, 1500 s).
  const PlanResult r = plan(cost, gpu_request(1000));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.ranked.front().first.data_workers, 2);
  EXPECT_TRUE(r.ranked.front().second.input_bound);
}

TEST(GpuPlan, MoreGpusWhenTheDeadlineNeedsThemWithTheirSync) {
  PerformanceModel m = gpu_model(2000);
  // Two GPUs synchronise for 10 ms per step: each computes 100 samples in 50 + 10 ms.
  m.sync.rows.push_back({.workers = 2, .memory_mb = {128}, .seconds = {0.010}});
  const CostModel cost = gpu_cost(m);
  EXPECT_NEAR(cost.gpu_feed(2, 0, 100).ceiling, 100 / 0.06, 1e-9);
  // One GPU alone is cheaper (7 workers, 300 s) when the deadline allows it.
  const PlanResult one = plan(cost, gpu_request(400, 2));
  EXPECT_EQ(one.ranked.front().first, on_gpu(7));
  // 250 s needs both: 1666.7 samples/s each, fed by 100 + 5.5 x 300 with 11 workers
  // (10 leave each at 1600 and cost more per sample: 4.5 / 3200 vs 4.55 / 3333.3).
  const PlanResult two = plan(cost, gpu_request(250, 2));
  ASSERT_TRUE(two.feasible);
  EXPECT_EQ(two.ranked.front().first, on_gpu(11, 2));
  EXPECT_NEAR(two.ranked.front().second.total_s, kSamples / (2 * 100 / 0.06), 1e-9);
  const std::string report = render_plan_report(two, cost, gpu_request(250, 2));
  EXPECT_NE(report.find("2 GPU trainers, batch 100 per GPU, 11 data workers (5.5 per GPU)"),
            std::string::npos)
      << report;
}

TEST(GpuPlan, DeadlineBelowTheFastestIsInfeasibleNamingBoth) {
  const PerformanceModel m = gpu_model(2000);
  const CostModel cost = gpu_cost(m);
  const PlanRequest request = gpu_request(200);
  const PlanResult r = plan(cost, request);
  EXPECT_FALSE(r.feasible);
  ASSERT_TRUE(r.fastest.has_value());
  EXPECT_EQ(r.fastest->first, on_gpu(7));  // 7..16 are as fast; 7 is the cheapest of them
  EXPECT_EQ(render_infeasible(r, request),
            "no configuration meets 200 s; the fastest is 300 s with 1 GPU trainer, batch 100 "
            "per GPU, 7 data workers, costing $0.1958");
}

TEST(GpuPlan, ReportShowsTheBottleneckAroundTheChoice) {
  const PerformanceModel m = gpu_model(2000);
  const CostModel cost = gpu_cost(m);
  const PlanRequest request = gpu_request(600, 1, 8);
  const PlanResult r = plan(cost, request);
  const std::string report = render_plan_report(r, cost, request);
  for (const char* line : {
           "chosen: 1 GPU trainer, batch 100 per GPU, 7 data workers",
           "throughput: 2000 samples/s (GPU-bound)",
           "per GPU: 2000 samples/s, GPU-bound: the GPU's ceiling 2000 samples/s, the input 2200 "
           "samples/s (local 100 + data workers 2100)",
           "data.offload_ratio 0.950",
           "cost: $0.1958 = GPU-hours $0.1667 (1 GPU x 300 s) + core-hours $0.02917 (7 "
           "data-worker cores)",
           "       5    5       1600  input-bound",
           "       6    6       1900  input-bound",
           "       7    7       2000    GPU-bound",
           "       9    9       2000    GPU-bound",
           "(beyond --max-data-workers)",
       }) {
    EXPECT_NE(report.find(line), std::string::npos) << "missing: " << line << "\n" << report;
  }
}

TEST(GpuPlan, EmittedConfigAndHeaderRunTheTrainersOnGpus) {
  const std::vector<Setting> s = planned_settings(on_gpu(7), Target::kSlurm, 0.95);
  const auto value = [&](const std::string& key) {
    for (const Setting& x : s) {
      if (x.key == key) return x.value;
    }
    ADD_FAILURE() << "no " << key;
    return KeyValue{};
  };
  EXPECT_EQ(std::get<std::string>(value("train.device")), "gpu");
  EXPECT_EQ(std::get<std::int64_t>(value("cluster.workers")), 7);
  EXPECT_DOUBLE_EQ(std::get<double>(value("data.offload_ratio")), 0.95);
  EXPECT_EQ(std::get<std::int64_t>(value("limits.memory_mb")), 0);  // no CPU share on a GPU
  const std::string header = emit_sbatch_header(on_gpu(7), 300, "job", 1769);
  EXPECT_NE(header.find("#SBATCH --gpus-per-task=1\n"), std::string::npos) << header;
  EXPECT_NE(header.find("#SBATCH hetjob\n#SBATCH --ntasks=7\n"), std::string::npos) << header;
}

TEST(GpuPlan, CpuTrainersKeepTheirSettingsAndCannotMixWithGpuModels) {
  const Candidate cpu{2, 1769, 2, 64, 64, 1, 1};
  for (const Setting& x : planned_settings(cpu, Target::kSlurm, 0.5)) {
    EXPECT_NE(x.key, "train.device");
    if (x.key == "limits.memory_mb") {
      EXPECT_EQ(std::get<std::int64_t>(x.value), 1769);
    }
    if (x.key == "limits.ranks") {
      EXPECT_EQ(std::get<std::string>(x.value), "trainers");
    }
  }
  EXPECT_EQ(emit_sbatch_header(cpu, 60, "job", 1769).find("gpus"), std::string::npos);
  const PerformanceModel m = gpu_model(2000);
  expect_input_error([&] { (void)gpu_cost(m).predict(cpu); },
                     {"describes GPU trainers", "has CPU trainers"});
  expect_input_error([&] { CostModel(CostModelOptions{.model = &m, .target = Target::kLambda}); },
                     {"GPU trainers", "--target slurm"});
  PlanRequest other = gpu_request(600);
  other.space.batch_sizes = {64, 128};
  expect_input_error([&] { (void)plan(gpu_cost(m), other); }, {"at batch 100 only", "64, 128"});
}

TEST(GpuPlan, ModelFileRoundTripsTheGpuRates) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "gpu.toml") << "dataset = \"synthetic\"\nepoch_samples = 600000\n"
                                            "gradient_mb = 1.0\nmb_per_vcpu = 1769\n"
                                            "[input]\np0 = 0.0\np1 = 0.0033333333333333335\n"
                                            "[[gpu]]\nbatch = 100\nceiling_samples_s = 2000.0\n"
                                            "local_samples_s = 100.0\n";
  const PerformanceModel m = read_fit_file(dir.path() / "gpu.toml");
  ASSERT_TRUE(m.gpu.present());
  EXPECT_TRUE(m.prices_input());
  EXPECT_DOUBLE_EQ(m.gpu.at(100)->ceiling_samples_s, 2000);
  EXPECT_EQ(m.gpu.at(64), nullptr);
  write_fit_file(dir.path() / "again.toml", m);
  const PerformanceModel again = read_fit_file(dir.path() / "again.toml");
  ASSERT_EQ(again.gpu.rates.size(), 1u);
  EXPECT_DOUBLE_EQ(again.gpu.rates[0].local_samples_s, 100);
  EXPECT_DOUBLE_EQ(again.input.p1, m.input.p1);
  // A CPU model without [train] is still not a model; a GPU rate must be positive.
  std::ofstream(dir.path() / "cpu.toml") << "dataset = \"x\"\nepoch_samples = 10\n"
                                            "gradient_mb = 1.0\nmb_per_vcpu = 1769\n";
  expect_input_error([&] { read_fit_file(dir.path() / "cpu.toml"); }, {"[train]"});
  std::ofstream(dir.path() / "bad.toml") << "dataset = \"x\"\nepoch_samples = 10\n"
                                            "gradient_mb = 1.0\nmb_per_vcpu = 1769\n[[gpu]]\n"
                                            "batch = 100\nceiling_samples_s = 0.0\n"
                                            "local_samples_s = 100.0\n";
  expect_input_error([&] { read_fit_file(dir.path() / "bad.toml"); },
                     {"bad.toml:5", "ceiling_samples_s > 0"});
}

}  // namespace
}  // namespace conflux::plan

namespace conflux::plan {
namespace {

// A profile recorded on GPU trainers: one trainer at batches 64 and 128 (twice at 128, at two
// --memory labels), two trainers at 128; builds of 64 and 128 samples.
Sweep gpu_sweep() {
  Sweep s;
  s.dataset = "synthetic";
  s.epoch_samples = 50000;
  s.gradient_mb = 2.5;
  s.device = "gpu";
  s.points = {
      {.workers = 1,
       .memory_mb = 10240,
       .batch = 64,
       .steps = 50,
       .iteration_s = 0.128,
       .compute_s = 0.032},  // ceiling 2000, local 500: input-bound alone
      {.workers = 1,
       .memory_mb = 10240,
       .batch = 128,
       .steps = 50,
       .iteration_s = 0.05,
       .compute_s = 0.05},  // ceiling 2560, local >= 2560: GPU-bound alone
      {.workers = 1,
       .memory_mb = 5120,
       .batch = 128,
       .steps = 50,
       .iteration_s = 0.05,
       .compute_s = 0.0466},
      {.workers = 2,
       .memory_mb = 10240,
       .batch = 128,
       .steps = 50,
       .iteration_s = 0.05,
       .compute_s = 0.05,
       .sync_s = 0.004},
  };
  s.builds = {{.batch = 64, .batches = 10, .seconds = 0.2},
              {.batch = 128, .batches = 5, .seconds = 0.4}};
  return s;
}

TEST(GpuPlan, FitOfAGpuProfileGivesRatesSyncAndInput) {
  const FitResult r = fit_sweep(gpu_sweep(), TrainForm::kAuto, "gpu.toml");
  const PerformanceModel& m = r.model;
  ASSERT_EQ(m.gpu.rates.size(), 2u);
  EXPECT_DOUBLE_EQ(m.gpu.at(64)->ceiling_samples_s, 2000);
  EXPECT_DOUBLE_EQ(m.gpu.at(64)->local_samples_s, 500);
  EXPECT_DOUBLE_EQ(m.gpu.at(128)->ceiling_samples_s, (128 / 0.05 + 128 / 0.0466) / 2);
  EXPECT_DOUBLE_EQ(m.gpu.at(128)->local_samples_s, 2560);
  ASSERT_EQ(m.sync.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(m.sync.seconds(2, 10240), 0.004);
  EXPECT_NEAR(m.input.p1, 0.2 / 64, 1e-12);  // 320 samples/s per thread
  EXPECT_TRUE(m.prices_input());
  const std::string report = render_fit_report(r);
  EXPECT_NE(report.find("      64             2000.0            500.0  input-bound"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("T_train"), std::string::npos) << report;
  // Written and read back, it plans: batch 64 takes data workers to reach the ceiling.
  testing::TempDir dir;
  write_fit_file(dir.path() / "model.toml", m);
  const PerformanceModel again = read_fit_file(dir.path() / "model.toml");
  EXPECT_EQ(again.gpu.rates.size(), 2u);
  const CostModel cost = gpu_cost(again);
  PlanRequest request = gpu_request(1e6);
  request.space.batch_sizes = {64};
  const PlanResult plan64 = plan(cost, request);
  // 500 + 5 x 320 = 2100 >= 2000 (4 give 1780).
  EXPECT_EQ(plan64.ranked.front().first.data_workers, 5);
}

TEST(GpuPlan, GpuProfilesRoundTripAndDoNotMergeWithCpuOnes) {
  testing::TempDir dir;
  write_sweep(dir.path() / "gpu.toml", gpu_sweep());
  EXPECT_EQ(read_sweep(dir.path() / "gpu.toml").device, "gpu");
  Sweep cpu = gpu_sweep();
  cpu.device = "cpu";
  expect_input_error(
      [&] {
        merge_sweeps({gpu_sweep(), cpu}, {"a.toml", "b.toml"});
      },
      {"b.toml profiles cpu trainers, a.toml gpu trainers"});
  Sweep none = gpu_sweep();
  for (SweepPoint& p : none.points) p.workers = 2;
  expect_input_error([&] { fit_sweep(none, TrainForm::kAuto, "two.toml"); },
                     {"two.toml", "--workers 1"});
}

}  // namespace
}  // namespace conflux::plan
