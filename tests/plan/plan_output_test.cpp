#include "conflux/plan/plan_output.hpp"

#include <gtest/gtest.h>

#include <toml++/toml.h>
#include <string>

#include "../support/config_text.hpp"
#include "../support/s3_table.hpp"
#include "../support/temp_dir.hpp"
#include "conflux/config/config.hpp"

namespace conflux::plan {
namespace {

using testing::expect_input_error;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

const S3TransferTable& s3() {
  return testing::s3_table();
}

PerformanceModel model() {
  PerformanceModel m;
  m.train = {.a = 1.9, .b = 4, .m = 60, .c = 0.004};
  m.transfer = {.k1 = 3.0, .k2 = -0.8};
  m.gradient_mb = 4.5;
  m.epoch_samples = 50000;
  m.source = "profiles/cifar.toml";
  return m;
}

TEST(PlanOutput, ReportShowsTheChoiceItsBreakdownAndTheAlternatives) {
  const PerformanceModel m = model();
  const CostModel cost(CostModelOptions{.model = &m, .epochs = 5, .s3 = &s3()});
  PlanRequest req{.deadline_s = 120, .alternatives = 3};
  req.space.max_workers = 8;
  req.space.memory_step_mb = 64;
  const PlanResult r = plan(cost, req);
  ASSERT_TRUE(r.feasible);
  const std::string text = render_plan_report(r, cost, req);
  const auto& [best, p] = r.ranked.front();
  EXPECT_TRUE(contains(text, "lambda (x86, K-Reduce over S3)")) << text;
  EXPECT_TRUE(contains(text, fmt::format("chosen: {} workers x {} MB, K = {}", best.workers,
                                         best.memory_mb, best.aggregators)))
      << text;
  EXPECT_TRUE(contains(text, "T_train")) << text;
  EXPECT_TRUE(contains(text, "S3 transfers")) << text;
  EXPECT_TRUE(contains(text, "GB-seconds")) << text;
  EXPECT_TRUE(contains(text, format_usd(p.cost_usd))) << text;
  EXPECT_TRUE(contains(text, "rank")) << text;
  EXPECT_TRUE(contains(text, "the next different configuration (W, K, batches) is")) << text;
  EXPECT_TRUE(contains(text, "ranked: distinct (W, K, Ba, Bn)")) << text;
  EXPECT_TRUE(contains(text, "exact search")) << text;
  EXPECT_TRUE(contains(text, "predictions evaluated")) << text;
  // One table line per ranked configuration.
  for (std::size_t i = 1; i <= r.ranked.size(); ++i) {
    EXPECT_TRUE(contains(text, fmt::format("\n{:>4} ", i))) << text;
  }
  // Distinct: no two table lines share (W, K, Ba, Bn).
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    const Candidate& a = r.ranked[i].first;
    const Candidate& b = r.ranked[i - 1].first;
    EXPECT_FALSE(a.workers == b.workers && a.aggregators == b.aggregators &&
                 a.aggregator_batch == b.aggregator_batch &&
                 a.nonaggregator_batch == b.nonaggregator_batch)
        << text;
  }
  // All points: the plain "next" line.
  PlanRequest points = req;
  points.distinct = false;
  const std::string all = render_plan_report(plan(cost, points), cost, points);
  EXPECT_TRUE(contains(all, "ranked: all points of the space")) << all;
  EXPECT_TRUE(contains(all, "; the next configuration is")) << all;
  // An infeasible result is not a report.
  PlanResult none = r;
  none.feasible = false;
  none.ranked.clear();
  expect_input_error([&] { render_plan_report(none, cost, req); }, {"no configuration meets"});
}

// An input-bound SLURM plan: the report says what the data workers build, at which ratio, that
// the trainer alone would miss the deadline, and lists D and the ratio per candidate.
TEST(PlanOutput, ReportExplainsTheDataWorkers) {
  PerformanceModel m = model();
  m.train = {.a = 7.6, .b = 4, .m = 60, .c = 0.016};    // building locally: 4 x the compute
  m.compute = {.a = 1.9, .b = 4, .m = 60, .c = 0.004};  // the compute alone
  m.input = {.p0 = 0, .p1 = 0.003};
  const CostModel cost(CostModelOptions{.model = &m, .target = Target::kSlurm, .epochs = 1});
  PlanRequest req{.deadline_s = 1e9, .alternatives = 2};
  req.space.max_workers = 1;
  req.space.batch_sizes = {128};
  req.space.max_data_workers = 4;
  req.deadline_s = 0.6 * cost.predict({1, 1769, 1, 128, 128}).total_s;  // the trainer alone misses
  const PlanResult r = plan(cost, req);
  ASSERT_TRUE(r.feasible);
  const std::string text = render_plan_report(r, cost, req);
  EXPECT_TRUE(contains(text, "input: 0..4 data workers of 1 thread")) << text;
  EXPECT_TRUE(contains(
      text, fmt::format("data.offload_ratio {:.3f}", r.ranked.front().second.offload_ratio)))
      << text;
  EXPECT_TRUE(contains(text, "  without data workers: ")) << text;
  EXPECT_TRUE(contains(text, "(misses the ")) << text;
  EXPECT_TRUE(contains(text, "ranked: distinct (W, K, Ba, Bn, D)")) << text;
  EXPECT_TRUE(contains(text, "  D offload")) << text;
  EXPECT_TRUE(contains(text, "core-hours (")) << text;
}

TEST(PlanOutput, InfeasibleNamesTheFastestConfiguration) {
  PlanResult r;
  r.fastest = Scored{Candidate{64, 10240, 16, 64, 128}, Prediction{}};
  r.fastest->second.total_s = 1776;
  r.fastest->second.cost_usd = 1.2345;
  EXPECT_EQ(render_infeasible(r, PlanRequest{.deadline_s = 60}),
            "no configuration meets 60 s; the fastest is 1776 s with 64 workers x 10240 MB, "
            "K = 16, batches Ba = 64, Bn = 128, costing $1.234");
}

TEST(PlanOutput, FormatsSecondsAndDollars) {
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(12.345), "12.35 s");
  EXPECT_EQ(format_seconds(60), "60 s");
  EXPECT_EQ(format_seconds(1.5), "1.5 s");
  EXPECT_EQ(format_seconds(7322), "7322 s (2:02:02)");
  EXPECT_EQ(format_usd(0.012345), "$0.01235");
  EXPECT_EQ(format_usd(12.345), "$12.35");
  EXPECT_EQ(format_usd(0), "$0");
}

const std::string kBase = std::string(testing::kMinimalConfig) + R"(
[run]
name = "cifar"
dir = "runs/{name}-{time}"
[cluster]
trainers = 2
[train]
batch_size = 128
epochs = 3
[comm]
strategy = "kreduce"
aggregators = 1
nonaggregator_batch_size = 96
stale_nonaggregators = true
)";

const ConfigSources kSources{{}, "", "20260101-000000"};

Config base_config(std::vector<std::string> overrides = {}) {
  return load_config_string(kBase, "base.toml",
                            ConfigSources{std::move(overrides), "", "20260101-000000"});
}

TEST(PlanOutput, EmittedConfigSetsKReduceKeys) {
  const std::string text = emit_config({6, 1536, 2, 32, 128}, Target::kLambda, base_config());
  EXPECT_TRUE(text.starts_with("# conflux plan (lambda): ")) << text;
  const toml::table t = toml::parse(text);
  EXPECT_EQ(t["cluster"]["trainers"].value<int>(), 6);
  EXPECT_EQ(t["train"]["batch_size"].value<int>(), 2 * 32 + 4 * 128);
  EXPECT_EQ(t["comm"]["strategy"].value<std::string>(), "kreduce");
  EXPECT_EQ(t["comm"]["aggregators"].value<int>(), 2);
  EXPECT_EQ(t["comm"]["nonaggregator_batch_size"].value<int>(), 128);
  EXPECT_EQ(t["comm"]["stale_nonaggregators"].value<bool>(), true);
  EXPECT_EQ(t["limits"]["memory_mb"].value<int>(), 1536);
}

// The rate follows the planned global batch: linear (with an epoch of warm-up when it grows
// and the config has none), square root, or not at all.
TEST(PlanOutput, EmittedConfigScalesTheLearningRate) {
  const Config base = base_config({"train.batch_size=128", "train.lr=0.1"});
  const Candidate c{4, 2048, 4, 128, 128};  // global batch 512: 4 x the config's
  const auto lr_of = [&](const std::vector<Setting>& lr) {
    const toml::table config = toml::parse(emit_config(c, Target::kSlurm, base, lr));
    return toml::table(*config["train"].as_table());  // a copy: `config` ends here
  };
  const auto linear = scaled_lr_settings(base, 512, LrScaling::kLinear, 60000);
  EXPECT_DOUBLE_EQ(*lr_of(linear)["lr"].value<double>(), 0.4);
  EXPECT_EQ(lr_of(linear)["warmup_steps"].value<std::int64_t>(), 118);  // ceil(60000 / 512)
  const auto sqrt = scaled_lr_settings(base, 512, LrScaling::kSqrt, 60000);
  EXPECT_DOUBLE_EQ(*lr_of(sqrt)["lr"].value<double>(), 0.2);
  EXPECT_EQ(lr_of(sqrt)["warmup_steps"].value<std::int64_t>(), 0);
  EXPECT_TRUE(scaled_lr_settings(base, 512, LrScaling::kNone, 60000).empty());
  EXPECT_TRUE(scaled_lr_settings(base, 128, LrScaling::kLinear, 60000).empty());
  // A smaller batch lowers the rate without warm-up; a config's own warm-up is kept.
  const auto down = scaled_lr_settings(base, 64, LrScaling::kLinear, 60000);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_DOUBLE_EQ(std::get<double>(down[0].value), 0.05);
  const Config warm = base_config({"train.batch_size=128", "train.warmup_steps=10"});
  EXPECT_EQ(scaled_lr_settings(warm, 512, LrScaling::kLinear, 60000).size(), 1u);
}

TEST(PlanOutput, EmittedConfigKeepsTheRunDirectoryTemplate) {
  // Each launch of the emitted file must get a directory of its own, as the base's would.
  const toml::table t =
      toml::parse(emit_config({6, 1536, 2, 32, 128}, Target::kLambda, base_config()));
  EXPECT_EQ(t["run"]["dir"].value<std::string>(), "runs/{name}-{time}");
}

TEST(PlanOutput, EmittedConfigUsesAllreduceWhenEveryWorkerAggregates) {
  for (const Target target : {Target::kLambda, Target::kSlurm}) {
    const toml::table t = toml::parse(emit_config({4, 2048, 4, 64, 64}, target, base_config()));
    EXPECT_EQ(t["comm"]["strategy"].value<std::string>(), "allreduce");
    EXPECT_EQ(t["comm"]["aggregators"].value<int>(), 0);
    EXPECT_EQ(t["comm"]["stale_nonaggregators"].value<bool>(), false);
    EXPECT_EQ(t["train"]["batch_size"].value<int>(), 256);
  }
}

TEST(PlanOutput, EmittedConfigIsAValidConfigWithThePlannedKeys) {
  const std::string merged = emit_config({6, 1536, 2, 32, 128}, Target::kLambda, base_config());
  const Config c = load_config_string(merged, "merged.toml", kSources);
  EXPECT_EQ(c.cluster().trainers, 6);
  EXPECT_EQ(c.train().batch_size, 576);
  EXPECT_EQ(c.train().epochs, 3);  // untouched keys stay
  EXPECT_EQ(c.comm().strategy, "kreduce");
  EXPECT_EQ(c.comm().aggregators, 2);
  EXPECT_EQ(c.comm().nonaggregator_batch_size, 128);
  EXPECT_TRUE(c.comm().stale_nonaggregators);
  EXPECT_EQ(c.limits().memory_mb, 1536);
  // Allreduce clears the base's K-Reduce settings (the loader rejects them otherwise).
  const Config a = load_config_string(
      emit_config({4, 2048, 4, 64, 64}, Target::kSlurm, base_config()), "merged.toml", kSources);
  EXPECT_EQ(a.comm().strategy, "allreduce");
  EXPECT_EQ(a.comm().aggregators, 0);
  EXPECT_EQ(a.train().batch_size, 256);
  // A base that is not a config, or that the candidate does not fit, is refused.
  expect_input_error([] { load_config_string("[cluster\n", "base.toml", kSources); },
                     {"TOML syntax error"});
  expect_input_error(
      [] {
        emit_config({4, 64, 4, 64, 64}, Target::kSlurm, base_config());
      },
      {"limits.memory_mb = 64"});
  // A base's per-trainer ratios would override the planned ratio: the plan clears them.
  const Config cleared =
      load_config_string(emit_config({4, 2048, 4, 64, 64}, Target::kSlurm,
                                     base_config({"data.offload_ratios=[0.5, 0.5]"})),
                         "merged.toml", kSources);
  EXPECT_TRUE(cleared.data().offload_ratios.empty());
  EXPECT_EQ(cleared.data().offload_ratio_for(3), 0);
}

// With data workers the config launches them (cluster.workers), offloads the planned share and
// limits the trainers alone; without, every rank trains and nothing is offloaded.
TEST(PlanOutput, EmittedConfigLaunchesThePlannedDataWorkers) {
  const Config c = load_config_string(
      emit_config({2, 1769, 2, 64, 64, 3}, Target::kSlurm, base_config(), {}, 0.61234),
      "merged.toml", kSources);
  EXPECT_EQ(c.cluster().trainers, 2);
  EXPECT_EQ(c.cluster().workers, 3);
  EXPECT_DOUBLE_EQ(c.data().offload_ratio, 0.612);
  EXPECT_FALSE(c.data().offload_auto);
  EXPECT_EQ(c.limits().ranks, "trainers");
  EXPECT_EQ(c.limits().memory_mb, 1769);
  const Config none = load_config_string(emit_config({2, 1769, 2, 64, 64}, Target::kSlurm,
                                                     base_config({"data.offload_ratio=\"auto\""})),
                                         "merged.toml", kSources);
  EXPECT_EQ(none.cluster().workers, 0);
  EXPECT_DOUBLE_EQ(none.data().offload_ratio, 0);
  EXPECT_FALSE(none.data().offload_auto);
  EXPECT_EQ(none.limits().ranks, "all");
}

TEST(PlanOutput, SbatchHeaderIsHeterogeneousWithDataWorkers) {
  const std::string h = emit_sbatch_header({2, 3000, 2, 64, 64, 3}, 100, "het", 1769, 4);
  const auto split = h.find("#SBATCH hetjob\n");
  ASSERT_NE(split, std::string::npos) << h;
  const std::string trainers = h.substr(0, split), workers = h.substr(split);
  EXPECT_TRUE(contains(trainers, "#SBATCH --ntasks=2\n#SBATCH --cpus-per-task=2\n")) << h;
  EXPECT_TRUE(contains(trainers, "#SBATCH --requeue\n")) << h;
  EXPECT_TRUE(contains(workers, "#SBATCH --ntasks=3\n#SBATCH --cpus-per-task=4\n")) << h;
  EXPECT_TRUE(contains(workers, "#SBATCH --mem-per-cpu=1769M\n")) << h;
  EXPECT_FALSE(contains(emit_sbatch_header({2, 3000, 2, 64, 64}, 100, "x", 1769, 4), "hetjob"));
}

TEST(PlanOutput, SbatchHeaderSizesTheJob) {
  const std::string h = emit_sbatch_header({8, 3000, 8, 64, 64}, 1000, "cifar plan", 1769);
  EXPECT_TRUE(contains(h, "#SBATCH --ntasks=8\n")) << h;
  EXPECT_TRUE(contains(h, "#SBATCH --cpus-per-task=2\n")) << h;
  EXPECT_TRUE(contains(h, "#SBATCH --mem-per-cpu=1500M\n")) << h;
  EXPECT_TRUE(contains(h, "#SBATCH --time=00:20:00\n")) << h;  // 1200 s
  EXPECT_TRUE(contains(h, "#SBATCH --signal=B:USR1@120\n")) << h;
  EXPECT_TRUE(contains(h, "#SBATCH --requeue\n")) << h;
  EXPECT_TRUE(contains(h, "#SBATCH --job-name=cifar-plan\n")) << h;
  const auto time_of = [](double total_s) {
    const std::string s = emit_sbatch_header({1, 128, 1, 1, 1}, total_s, "x", 1769);
    const auto at = s.find("--time=") + 7;
    return s.substr(at, s.find('\n', at) - at);
  };
  // Short jobs: the prediction plus 180 s, so USR1 (120 s before the limit) comes after it.
  EXPECT_EQ(time_of(0), "00:03:00");
  EXPECT_EQ(time_of(50), "00:04:00");   // 230 s, rounded up
  EXPECT_EQ(time_of(900), "00:18:00");  // 20 % margin from 900 s on
  EXPECT_EQ(time_of(901), "00:19:00");  // rounded up
  EXPECT_EQ(time_of(3000), "01:00:00");
  EXPECT_EQ(time_of(200000), "2-18:40:00");  // 4000 minutes
  EXPECT_TRUE(contains(emit_sbatch_header({3, 100, 3, 8, 8}, 10, "", 1769),
                       "--cpus-per-task=1\n#SBATCH --mem-per-cpu=100M"));
}

}  // namespace
}  // namespace conflux::plan
