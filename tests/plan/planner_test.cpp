#include "conflux/plan/planner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <random>

#include "../support/temp_dir.hpp"
#include "conflux/plan/plan_output.hpp"
#include "conflux/plan/s3_transfer.hpp"

namespace conflux::plan {
namespace {

using testing::expect_input_error;

const S3TransferTable& real_table() {
  static const S3TransferTable table = S3TransferTable::load(S3TransferTable::installed_dir());
  return table;
}

// A small random S3 table: 2..5 object sizes, each over its own random memory knots.
S3TransferTable random_table(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<S3TransferTable::Row> rows;
  double size = 0.5 + 2 * u(rng);
  const int count = 2 + static_cast<int>(rng() % 4);
  for (int r = 0; r < count; ++r) {
    S3TransferTable::Row row;
    row.object_mb = size;
    size += 1 + 30 * u(rng);
    double m = 100 + 100 * u(rng);
    const int knots = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < knots; ++k) {
      row.memory_mb.push_back(std::round(m));
      m += 10 + 120 * u(rng);
      row.upload_s.push_back(0.01 + 2 * u(rng));
      row.download_s.push_back(0.01 + 2 * u(rng));
    }
    rows.push_back(std::move(row));
  }
  return S3TransferTable::from_rows(std::move(rows));
}

SyncTimeTable random_sync(std::mt19937_64& rng, int max_workers) {
  std::uniform_real_distribution<double> u(0, 1);
  SyncTimeTable sync;
  for (int w = 2; w <= max_workers; ++w) {
    if (u(rng) < 0.3) continue;  // unmeasured counts are skipped by the planner
    SyncTimeTable::Row row;
    row.workers = w;
    double m = 100 + 150 * u(rng);
    const int points = 1 + static_cast<int>(rng() % 5);
    for (int p = 0; p < points; ++p) {
      row.memory_mb.push_back(m);
      m += 5 + 100 * u(rng);
      row.seconds.push_back(0.001 + 0.5 * u(rng));
    }
    sync.rows.push_back(std::move(row));
  }
  return sync;
}

// One random planning problem with everything it points to.
struct Instance {
  PerformanceModel model;
  std::optional<S3TransferTable> s3;
  std::optional<CostModel> cost;
  std::optional<StepsToTarget> to_target;  // when planning for a target (statistical efficiency)
  PlanRequest request;
  std::string description;
};

void make_random(std::mt19937_64& rng, Instance& in) {
  std::uniform_real_distribution<double> u(0, 1);
  const auto pick = [&](double lo, double hi) { return lo + (hi - lo) * u(rng); };
  const bool lambda = u(rng) < 0.6;
  PerformanceModel& m = in.model;
  m.train.a = u(rng) < 0.1 ? -pick(0.1, 5) : pick(0.1, 50);
  m.train.b = pick(-5, 50);
  m.train.m = u(rng) < 0.7 ? pick(-120, 500) : 0;
  m.train.c = u(rng) < 0.1 ? -pick(0, 0.05) : (u(rng) < 0.3 ? 0 : pick(0, 0.5));
  m.transfer.k1 = u(rng) < 0.2 ? 0 : pick(0, 5);
  m.transfer.k2 = pick(-1.5, 1.0);
  m.gradient_mb = u(rng) < 0.3 ? pick(50, 400) : pick(0.05, 40);
  m.epoch_samples = 50 + rng() % 100000;
  m.mb_per_vcpu = pick(40, 400);
  PlanSpace& s = in.request.space;
  s.min_workers = 1 + static_cast<int>(rng() % 2);
  s.max_workers = s.min_workers + static_cast<int>(rng() % 5);
  s.min_memory_mb = 128 + static_cast<int>(rng() % 80);
  s.max_memory_mb = s.min_memory_mb + static_cast<int>(rng() % 320);
  s.memory_step_mb = 1 + static_cast<int>(rng() % 7);
  s.batch_sizes.clear();
  const int batches = 2 + static_cast<int>(rng() % 3);
  for (int b = 0; b < batches; ++b) s.batch_sizes.push_back(1 + static_cast<int>(rng() % 64));
  // The planner refuses models that predict a non-positive compute time in the space; keep
  // the odd shapes (negative a, b or c) but lift them above zero at every corner.
  const auto [bmin, bmax] = std::minmax_element(s.batch_sizes.begin(), s.batch_sizes.end());
  double lowest = 1e300;
  for (const int b : {*bmin, *bmax}) {
    for (const int mem : {s.min_memory_mb, s.max_memory_mb}) {
      lowest = std::min(lowest, m.train.seconds(b, mem));
    }
  }
  if (lowest <= 0) m.train.c += -lowest + pick(1e-4, 0.05);
  m.sync = random_sync(rng, s.max_workers);
  const bool measured = std::any_of(m.sync.rows.begin(), m.sync.rows.end(),
                                    [&](const auto& r) { return r.workers >= s.min_workers; });
  if (!lambda && !measured) s.min_workers = 1;  // SLURM plans over measured counts only
  if (lambda) {
    if (u(rng) < 0.5) {
      in.s3 = random_table(rng);
    } else {
      in.s3 = real_table();
    }
  }
  PricesSection prices;
  prices.lambda_x86_gb_s *= pick(0.2, 5);
  prices.lambda_arm_gb_s *= pick(0.2, 5);
  prices.lambda_request *= pick(0.2, 5000);
  prices.lambda_max_seconds = pick(1, 900);
  prices.object_put *= pick(0.2, 5);
  prices.object_get *= pick(0.2, 5);
  prices.slurm_core_hour *= pick(0.2, 5);
  in.cost.emplace(CostModelOptions{.model = &in.model,
                                   .prices = prices,
                                   .target = lambda ? Target::kLambda : Target::kSlurm,
                                   .arch = u(rng) < 0.5 ? LambdaArch::kX86 : LambdaArch::kArm,
                                   .epochs = 1 + static_cast<int>(rng() % 5),
                                   .s3 = in.s3 ? &*in.s3 : nullptr});
  in.request.alternatives = static_cast<int>(rng() % 9);
  in.description =
      fmt::format("{} a={} b={} m={} c={} k1={} k2={} grad={} W {}..{} M {}..{} step {}",
                  lambda ? "lambda" : "slurm", m.train.a, m.train.b, m.train.m, m.train.c,
                  m.transfer.k1, m.transfer.k2, m.gradient_mb, s.min_workers, s.max_workers,
                  s.min_memory_mb, s.max_memory_mb, s.memory_step_mb);
}

void expect_same(const PlanResult& got, const PlanResult& want, const std::string& what) {
  ASSERT_EQ(got.feasible, want.feasible) << what;
  ASSERT_EQ(got.ranked.size(), want.ranked.size()) << what;
  for (std::size_t i = 0; i < want.ranked.size(); ++i) {
    EXPECT_EQ(got.ranked[i].first, want.ranked[i].first) << what << " rank " << i;
    EXPECT_EQ(got.ranked[i].second, want.ranked[i].second) << what << " rank " << i;
  }
  ASSERT_EQ(got.fastest.has_value(), want.fastest.has_value()) << what;
  if (want.fastest) {
    EXPECT_EQ(got.fastest->first, want.fastest->first) << what;
    EXPECT_EQ(got.fastest->second, want.fastest->second) << what;
  }
  EXPECT_EQ(got.space_size, want.space_size) << what;
  EXPECT_LE(got.evaluated, want.evaluated) << what;
}

TEST(Planner, MatchesExhaustiveSearchOnRandomInstances) {
  std::mt19937_64 rng(20261121);
  int feasible = 0, infeasible = 0, lambda = 0, slurm = 0, exact_deadline = 0, fewer = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Instance in;
    make_random(rng, in);
    const CostModel& cost = *in.cost;
    // A deadline around the predicted time of a random configuration of the space: sometimes
    // exactly it (the boundary case), sometimes far below everything.
    PlanRequest probe = in.request;
    probe.deadline_s = 1e300;
    probe.distinct = false;
    const PlanResult all = exhaustive_plan(cost, probe);
    if (all.ranked.empty()) continue;  // nothing finite (never happens with these ranges)
    std::uniform_real_distribution<double> u(0, 1);
    const double pivot = all.ranked[rng() % all.ranked.size()].second.total_s;
    const double r = u(rng);
    in.request.deadline_s = r < 0.2    ? pivot
                            : r < 0.35 ? pivot * 1e-3
                                       : pivot * (0.3 + 1.5 * u(rng));
    if (!(in.request.deadline_s > 0)) in.request.deadline_s = 1;
    exact_deadline += r < 0.2;
    // Both modes on the same instance: distinct combinations and all points.
    std::size_t sizes[2] = {0, 0};
    for (const bool distinct : {true, false}) {
      in.request.distinct = distinct;
      const PlanResult want = exhaustive_plan(cost, in.request);
      const PlanResult got = plan(cost, in.request);
      expect_same(
          got, want,
          fmt::format("trial {} ({}): {} deadline {}", trial, distinct ? "distinct" : "all points",
                      in.description, in.request.deadline_s));
      if (::testing::Test::HasFailure()) return;
      sizes[distinct ? 0 : 1] = want.ranked.size();
      if (distinct) {
        (want.feasible ? feasible : infeasible)++;
        (cost.options().target == Target::kLambda ? lambda : slurm)++;
      }
    }
    fewer += sizes[0] < sizes[1];  // fewer combinations than points meet the deadline
  }
  fmt::print(
      "random instances (each in both modes): {} feasible, {} infeasible, {} lambda, {} slurm, "
      "{} deadlines at a predicted time, {} with fewer distinct answers\n",
      feasible, infeasible, lambda, slurm, exact_deadline, fewer);
  EXPECT_GE(feasible + infeasible, 100);
  EXPECT_GE(infeasible, 20);
  EXPECT_GE(feasible, 50);
  EXPECT_GE(slurm, 20);
}

// Gives the instance a deadline between half and 2.5 times its slowest candidate's time;
// false when the space holds no candidate (batch rules may leave none).
bool set_random_deadline(std::mt19937_64& rng, Instance& in) {
  PlanRequest probe = in.request;
  probe.deadline_s = 1e300;
  const PlanResult all = exhaustive_plan(*in.cost, probe);
  if (all.ranked.empty()) return false;
  in.request.deadline_s = all.ranked.back().second.total_s * (0.5 + rng() % 100 / 50.0);
  if (!(in.request.deadline_s > 0)) in.request.deadline_s = 1;
  return true;
}

// plan() against exhaustive_plan() in distinct and all-points mode; `check` sees each
// exhaustive answer. Returns whether the distinct answer is feasible.
bool expect_exhaustive_in_both_modes(Instance& in, const std::string& what,
                                     const std::function<void(const PlanResult&)>& check) {
  bool feasible = false;
  for (const bool distinct : {true, false}) {
    in.request.distinct = distinct;
    const PlanResult want = exhaustive_plan(*in.cost, in.request);
    expect_same(plan(*in.cost, in.request), want, what);
    if (::testing::Test::HasFailure()) return feasible;
    feasible = feasible || (want.feasible && distinct);
    check(want);
  }
  return feasible;
}

// FasDL's batch rules (a fixed aggregator batch, Bn tied to Ba, a global-batch cap) on random
// instances: still the exhaustive answer, and every answer keeps the rules.
TEST(Planner, MatchesExhaustiveSearchUnderBatchRules) {
  std::mt19937_64 rng(20261125);
  int feasible = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Instance in;
    make_random(rng, in);
    PlanSpace& s = in.request.space;
    const int smallest = *std::min_element(s.batch_sizes.begin(), s.batch_sizes.end());
    s.aggregator_batch = rng() % 2 == 0 ? 0 : s.batch_sizes[rng() % s.batch_sizes.size()];
    s.nonaggregator_batch_ratio = static_cast<int>(rng() % 3);
    const int floor = s.aggregator_batch > 0 ? s.aggregator_batch : smallest;
    s.max_global_batch = rng() % 4 == 0 ? 0 : floor + static_cast<int>(rng() % 300);
    if (!set_random_deadline(rng, in)) continue;  // the rules may leave nothing in the space
    const std::string what =
        fmt::format("trial {}: {} Ba {} ratio {} cap {}", trial, in.description, s.aggregator_batch,
                    s.nonaggregator_batch_ratio, s.max_global_batch);
    feasible += expect_exhaustive_in_both_modes(in, what, [&](const PlanResult& want) {
      for (const Scored& x : want.ranked) {
        const Candidate& c = x.first;
        if (s.aggregator_batch > 0) {
          EXPECT_EQ(c.aggregator_batch, s.aggregator_batch);
        }
        if (s.nonaggregator_batch_ratio > 0 && c.aggregators < c.workers) {
          EXPECT_EQ(c.nonaggregator_batch, s.nonaggregator_batch_ratio * c.aggregator_batch);
        }
        if (s.max_global_batch > 0) {
          EXPECT_LE(CostModel::samples_per_iteration(c),
                    static_cast<std::uint64_t>(s.max_global_batch));
        }
      }
    });
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(feasible, 50);
}

// The time-to-target objective: each candidate trains for S(B) = S_min (1 + B_noise / B)
// steps of its global batch B (with FasDL's batch rules sometimes): still the exhaustive
// answer, and the steps are those of the candidate's own global batch.
TEST(Planner, MatchesExhaustiveSearchForATarget) {
  std::mt19937_64 rng(20261127);
  int feasible = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Instance in;
    make_random(rng, in);
    std::uniform_real_distribution<double> u(0, 1);
    in.to_target =
        StepsToTarget{.target = {.kind = TrainingTarget::Kind::kTestAccuracy, .value = 0.9},
                      .s_min = 10 + 5000 * u(rng),
                      .b_noise = 1 + 2000 * u(rng)};
    CostModelOptions options = in.cost->options();
    options.to_target = &*in.to_target;
    in.cost.emplace(options);
    PlanSpace& s = in.request.space;
    if (rng() % 2 == 0) {
      s.aggregator_batch = s.batch_sizes[rng() % s.batch_sizes.size()];
      s.nonaggregator_batch_ratio = 1;
      s.max_global_batch = s.aggregator_batch + static_cast<int>(rng() % 200);
    }
    if (!set_random_deadline(rng, in)) continue;
    const std::string what = fmt::format("trial {}: {} S_min {} B_noise {}", trial, in.description,
                                         in.to_target->s_min, in.to_target->b_noise);
    feasible += expect_exhaustive_in_both_modes(in, what, [&](const PlanResult& want) {
      for (const Scored& x : want.ranked) {
        const double b = static_cast<double>(CostModel::samples_per_iteration(x.first));
        EXPECT_EQ(x.second.iterations, in.to_target->steps(b));
      }
    });
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(feasible, 50);
}

// Data-service workers on random SLURM instances: the compute alone T_c (sometimes above
// T_train somewhere, so that offloading saves nothing there), the input cost P(B), random
// thread counts on both sides. Still the exhaustive answer; D > 0 wins in some instances.
TEST(Planner, MatchesExhaustiveSearchWithDataWorkers) {
  std::mt19937_64 rng(20261128);
  std::uniform_real_distribution<double> u(0, 1);
  const auto pick = [&](double lo, double hi) { return lo + (hi - lo) * u(rng); };
  int feasible = 0, with_workers = 0, trials = 0;
  for (int trial = 0; trials < 150 && trial < 2000; ++trial) {
    Instance in;
    make_random(rng, in);
    if (in.cost->options().target != Target::kSlurm) continue;
    ++trials;
    PerformanceModel& m = in.model;
    m.compute = {.a = std::abs(m.train.a) * pick(0.1, 1.2),
                 .b = pick(0, 50),
                 .m = pick(-120, 500),
                 .c = u(rng) < 0.5 ? 0 : pick(0, 0.05)};
    m.input = {.p0 = u(rng) < 0.3 ? 0 : pick(0, 0.05), .p1 = pick(1e-4, 0.05)};
    in.request.space.max_data_workers = 1 + static_cast<int>(rng() % 6);
    CostModelOptions options = in.cost->options();
    options.threads = 1 + static_cast<int>(rng() % 3);
    options.worker_threads = 1 + static_cast<int>(rng() % 3);
    in.cost.emplace(options);
    if (!set_random_deadline(rng, in)) continue;
    const std::string what = fmt::format(
        "trial {}: {} T_c a={} b={} m={} c={} P={}+{}B D<={} threads {}/{}", trial, in.description,
        m.compute.a, m.compute.b, m.compute.m, m.compute.c, m.input.p0, m.input.p1,
        in.request.space.max_data_workers, options.threads, options.worker_threads);
    feasible += expect_exhaustive_in_both_modes(in, what, [&](const PlanResult& want) {
      for (const Scored& x : want.ranked) {
        EXPECT_LE(x.first.data_workers, in.request.space.max_data_workers);
        if (x.first.data_workers == 0) {
          EXPECT_EQ(x.second.offload_ratio, 0) << what;
        }
      }
      if (!want.ranked.empty()) with_workers += want.ranked.front().second.offload_ratio > 0;
    });
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(trials, 100);
  EXPECT_GE(feasible, 40);
  EXPECT_GE(with_workers, 20);
}

// The distinct answer by its definition: walk every feasible point in the total order and keep
// the first point of each (W, K, Ba, Bn), up to 1 + alternatives of them.
TEST(Planner, DistinctModeListsEachCombinationAtItsCheapestPoint) {
  std::mt19937_64 rng(5);
  int compared = 0;
  for (int trial = 0; trial < 300 && compared < 100; ++trial) {
    Instance in;
    make_random(rng, in);
    PlanSpace& s = in.request.space;
    s.min_workers = 1;  // W = 1 needs no measured sync time on SLURM
    s.max_workers = std::min(s.max_workers, 3);
    s.max_memory_mb = s.min_memory_mb + s.memory_step_mb * static_cast<int>(rng() % 40);
    const CostModel& cost = *in.cost;
    PlanRequest every = in.request;
    every.deadline_s = 1e300;
    every.distinct = false;
    every.alternatives = 1000;
    const PlanResult probe = exhaustive_plan(cost, every);
    if (probe.ranked.empty() || probe.space_size > 1001) continue;
    // A deadline that some points meet and others do not.
    every.deadline_s = probe.ranked[rng() % probe.ranked.size()].second.total_s;
    if (!(every.deadline_s > 0)) continue;  // negative times of odd random models
    const PlanResult points = exhaustive_plan(cost, every);
    std::vector<Scored> want;
    for (const Scored& x : points.ranked) {
      const auto same = [&](const Scored& y) {
        return y.first.workers == x.first.workers && y.first.aggregators == x.first.aggregators &&
               y.first.aggregator_batch == x.first.aggregator_batch &&
               y.first.nonaggregator_batch == x.first.nonaggregator_batch;
      };
      if (std::none_of(want.begin(), want.end(), same)) want.push_back(x);
    }
    if (want.size() > static_cast<std::size_t>(in.request.alternatives) + 1) {
      want.resize(static_cast<std::size_t>(in.request.alternatives) + 1);
    }
    PlanRequest distinct = in.request;
    distinct.deadline_s = every.deadline_s;
    distinct.distinct = true;
    const PlanResult got = plan(cost, distinct);
    ASSERT_EQ(got.ranked.size(), want.size()) << in.description;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got.ranked[i].first, want[i].first) << in.description << " rank " << i;
      EXPECT_EQ(got.ranked[i].second, want[i].second) << in.description << " rank " << i;
    }
    if (::testing::Test::HasFailure()) return;
    ++compared;
  }
  EXPECT_GE(compared, 100);
}

TEST(Planner, RanksTiesByTheTotalOrder) {
  // T_train = c, no transfer term, one sync time: every memory size of a core count costs
  // the same and takes the same time, so only the tie order separates them.
  PerformanceModel m;
  m.train = {.a = 0, .b = 0, .m = 0, .c = 0.1};
  m.epoch_samples = 1000;
  m.mb_per_vcpu = 1e6;
  m.sync.rows.push_back({.workers = 2, .memory_mb = {128}, .seconds = {0.1}});
  const CostModel cost(CostModelOptions{.model = &m, .target = Target::kSlurm});
  PlanRequest req{.deadline_s = 1e9, .alternatives = 9};
  req.space = {.min_workers = 1,
               .max_workers = 3,
               .min_memory_mb = 128,
               .max_memory_mb = 140,
               .memory_step_mb = 1,
               .batch_sizes = {10, 20}};
  req.distinct = false;
  const PlanResult got = plan(cost, req);
  expect_same(got, exhaustive_plan(cost, req), "ties");
  ASSERT_EQ(got.ranked.size(), 10u);
  // W = 3 is unmeasured on SLURM and skipped; W = 1 with B = 20 is cheapest (no sync).
  EXPECT_EQ(got.ranked[0].first, (Candidate{1, 128, 1, 20, 20, 0, 1}));
  EXPECT_EQ(got.ranked[1].first, (Candidate{1, 129, 1, 20, 20, 0, 1}));
  for (const auto& [c, p] : got.ranked) EXPECT_NE(c.workers, 3);

  // Distinct: each of the 2 + 2 = 4 (W, B) combinations (SLURM: K = W) once, at its least
  // memory size (all sizes tie), in the order of cost.
  req.distinct = true;
  const PlanResult distinct = plan(cost, req);
  expect_same(distinct, exhaustive_plan(cost, req), "distinct ties");
  ASSERT_EQ(distinct.ranked.size(), 4u);
  EXPECT_EQ(distinct.ranked[0].first, (Candidate{1, 128, 1, 20, 20, 0, 1}));
  for (std::size_t i = 0; i < distinct.ranked.size(); ++i) {
    EXPECT_EQ(distinct.ranked[i].first.memory_mb, 128);
    for (std::size_t j = 0; j < i; ++j) {
      const Candidate& a = distinct.ranked[i].first;
      const Candidate& b = distinct.ranked[j].first;
      EXPECT_FALSE(a.workers == b.workers && a.aggregator_batch == b.aggregator_batch);
    }
  }
}

PerformanceModel realistic_model() {
  // A CIFAR-10-sized CNN: ~1 ms per sample on one vCPU, 4.5 MB of gradients.
  PerformanceModel m;
  m.train = {.a = 1.9, .b = 4, .m = 60, .c = 0.004};
  m.transfer = {.k1 = 3.0, .k2 = -0.8};
  m.gradient_mb = 4.5;
  m.epoch_samples = 50000;
  m.dataset = "cifar-10";
  m.source = "test";
  return m;
}

bool same_combination(const Candidate& a, const Candidate& b) {
  return a.workers == b.workers && a.aggregators == b.aggregators &&
         a.aggregator_batch == b.aggregator_batch &&
         a.nonaggregator_batch == b.nonaggregator_batch && a.data_workers == b.data_workers;
}

TEST(Planner, AnswersTheFullDefaultSpace) {
  const PerformanceModel m = realistic_model();
  double slowest = 0;
  for (const bool distinct : {true, false}) {
    for (const double deadline : {30.0, 120.0, 600.0, 3600.0, 1.0}) {
      const CostModel cost(CostModelOptions{
          .model = &m, .target = Target::kLambda, .epochs = 5, .s3 = &real_table()});
      PlanRequest req{.deadline_s = deadline};
      req.distinct = distinct;
      const PlanResult r = plan(cost, req);
      slowest = std::max(slowest, r.elapsed_s);
      fmt::print(
          "full default space ({}), deadline {} s: {} configurations, {} evaluated, {:.3f} s, "
          "{}\n",
          distinct ? "distinct" : "all points", deadline, r.space_size, r.evaluated, r.elapsed_s,
          r.feasible ? fmt::format("best {} MB x {} workers, ${:.5f}, {:.1f} s",
                                   r.ranked[0].first.memory_mb, r.ranked[0].first.workers,
                                   r.ranked[0].second.cost_usd, r.ranked[0].second.total_s)
                     : fmt::format("infeasible, fastest {:.1f} s", r.fastest->second.total_s));
      EXPECT_GT(r.space_size, 500'000'000u);
      if (!r.feasible) {
        ASSERT_TRUE(r.fastest.has_value());
        EXPECT_GT(r.fastest->second.total_s, deadline);
        continue;
      }
      ASSERT_EQ(r.ranked.size(), 6u);
      EXPECT_LE(r.ranked[0].second.total_s, deadline);
      EXPECT_TRUE(std::is_sorted(r.ranked.begin(), r.ranked.end(), cheaper));
      for (std::size_t i = 0; distinct && i < r.ranked.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          EXPECT_FALSE(same_combination(r.ranked[i].first, r.ranked[j].first)) << i << " " << j;
        }
      }
      // Spot check: no sampled feasible point is cheaper than the sixth (distinct: unless it
      // belongs to a listed combination, whose listed point is then at least as cheap).
      std::mt19937_64 rng(7);
      const PlanSpace& s = req.space;
      for (int i = 0; i < 20000; ++i) {
        Candidate c;
        c.workers = 1 + static_cast<int>(rng() % 64);
        c.memory_mb = 128 + static_cast<int>(rng() % (10240 - 128 + 1));
        c.aggregators = 1 + static_cast<int>(rng() % static_cast<unsigned>(c.workers));
        c.aggregator_batch = s.batch_sizes[rng() % s.batch_sizes.size()];
        c.nonaggregator_batch =
            c.aggregators == c.workers
                ? c.aggregator_batch
                : std::max(c.aggregator_batch, s.batch_sizes[rng() % s.batch_sizes.size()]);
        const Scored x{c, cost.predict(c)};
        if (x.second.total_s > deadline) continue;
        const auto listed = std::find_if(r.ranked.begin(), r.ranked.end(), [&](const Scored& y) {
          return same_combination(y.first, c);
        });
        if (distinct && listed != r.ranked.end()) {
          EXPECT_FALSE(cheaper(x, *listed)) << c.workers << " " << c.memory_mb;
        } else {
          EXPECT_FALSE(cheaper(x, r.ranked.back())) << c.workers << " " << c.memory_mb;
        }
      }
    }
  }
  fmt::print("full default space: slowest query {:.3f} s\n", slowest);
}

TEST(Planner, MatchesExhaustiveSearchOnAFullMemoryRange) {
  const PerformanceModel m = realistic_model();
  const CostModel cost(
      CostModelOptions{.model = &m, .target = Target::kLambda, .epochs = 5, .s3 = &real_table()});
  for (const double deadline : {200.0, 2000.0}) {
    for (const bool distinct : {true, false}) {
      PlanRequest req{.deadline_s = deadline, .alternatives = 5};
      req.space.max_workers = 3;
      req.space.batch_sizes = {16, 64, 256};
      req.distinct = distinct;
      expect_same(plan(cost, req), exhaustive_plan(cost, req),
                  fmt::format("{} s, distinct {}", deadline, distinct));
    }
  }
}

// A margin m plans exactly as the deadline divided by 1 + m, and every choice keeps it.
TEST(Planner, MarginShrinksTheDeadlineTheChoicesMustMeet) {
  const PerformanceModel m = realistic_model();
  const CostModel cost(
      CostModelOptions{.model = &m, .target = Target::kLambda, .epochs = 5, .s3 = &real_table()});
  PlanRequest with_margin{.deadline_s = 2000, .margin = 0.25, .alternatives = 5};
  with_margin.space.max_workers = 3;
  with_margin.space.batch_sizes = {16, 64, 256};
  PlanRequest shrunk = with_margin;
  shrunk.deadline_s = 1600;
  shrunk.margin = 0;
  const PlanResult r = plan(cost, with_margin);
  expect_same(r, plan(cost, shrunk), "margin 0.25 = deadline 1600 s");
  expect_same(r, exhaustive_plan(cost, with_margin), "margin 0.25, exhaustive");
  ASSERT_TRUE(r.feasible);
  for (const Scored& s : r.ranked) EXPECT_LE(s.second.total_s * 1.25, 2000 * (1 + 1e-12));
  const PlanResult none = plan(cost, PlanRequest{.deadline_s = 2000});
  EXPECT_LT(none.ranked.front().second.cost_usd, r.ranked.front().second.cost_usd + 1e-12);
}

// Profiled with one compute thread, a rank cannot use more than one vCPU: on SLURM (where
// memory buys only cores) the plan never pays for memory above mb_per_vcpu, even to be
// fastest, unless the config gives it more threads. (On Lambda more memory also buys network
// bandwidth, so a larger function can still be faster there.)
TEST(Planner, NeverPlansMoreCpuThanTheThreadsCanUse) {
  const PerformanceModel m = realistic_model();  // mb_per_vcpu 1769
  for (const int threads : {1, 6}) {
    SCOPED_TRACE(threads);
    const CostModel cost(
        CostModelOptions{.model = &m, .target = Target::kSlurm, .epochs = 5, .threads = threads});
    PlanRequest req{.deadline_s = 1e-9, .alternatives = 5};
    req.space.max_workers = 1;
    req.space.batch_sizes = {64, 256};
    const PlanResult fastest = plan(cost, req);
    ASSERT_TRUE(fastest.fastest);
    req.deadline_s = 1.5 * fastest.fastest->second.total_s;
    const PlanResult r = plan(cost, req);
    expect_same(r, exhaustive_plan(cost, req), "capped");
    ASSERT_TRUE(r.feasible);
    if (threads == 1) {
      EXPECT_LE(fastest.fastest->first.memory_mb, 1769);
      for (const Scored& s : r.ranked) EXPECT_LE(s.first.memory_mb, 1769);
    } else {
      EXPECT_GT(fastest.fastest->first.memory_mb, 1769);  // six threads use the bigger share
    }
  }
}

// An input-bound job: building a batch costs the trainer three times its compute. The plan
// adds data workers and offloads; the same job with cheap input keeps D = 0.
TEST(Planner, AddsDataWorkersWhenTheInputPipelineIsTheBottleneck) {
  PerformanceModel m = realistic_model();
  m.compute = {.a = 1.9, .b = 4, .m = 60, .c = 0.004};  // T_c = T_train: input costs nothing
  m.input = {.p0 = 0, .p1 = 0.003};
  m.train = {.a = 7.6, .b = 4, .m = 60, .c = 0.016};  // local building: 4 x the compute
  PlanRequest req{.deadline_s = 1e9, .alternatives = 3};
  req.space.max_workers = 1;
  req.space.batch_sizes = {128};
  req.space.max_data_workers = 8;
  const CostModel cost(CostModelOptions{.model = &m, .target = Target::kSlurm, .epochs = 1});
  PlanResult r = plan(cost, req);
  expect_same(r, exhaustive_plan(cost, req), "input-bound");
  ASSERT_TRUE(r.feasible);
  const auto& [best, p] = r.ranked.front();
  EXPECT_GT(best.data_workers, 0);
  EXPECT_GT(p.offload_ratio, 0.5);
  EXPECT_LT(p.train_s, 0.5 * p.local_s);  // the step without its local building
  // The offloaded step balances the trainer's remaining work and the workers'.
  EXPECT_NEAR(p.train_s,
              std::max(p.local_s - p.offload_ratio *
                                       (p.local_s - cost.compute_seconds(128, best.memory_mb)),
                       p.data_worker_s),
              1e-12);
  // The price counts the data workers' cores.
  EXPECT_DOUBLE_EQ(p.cost_usd, (cost.cores(best.memory_mb) + best.data_workers) * p.total_s / 3600 *
                                   cost.options().prices.slurm_core_hour);
  m.train = m.compute;  // nothing to offload
  const PlanResult cheap = plan(cost, req);
  ASSERT_TRUE(cheap.feasible);
  EXPECT_EQ(cheap.ranked.front().first.data_workers, 0);
  EXPECT_EQ(cheap.ranked.front().second.offload_ratio, 0);
}

// Thread counts as a plan dimension, on random instances of both targets (with data workers
// on SLURM sometimes): each profiled count has its own T_train (and T_c), capped at its own
// share. Still the exhaustive answer.
TEST(Planner, MatchesExhaustiveSearchAcrossThreadCounts) {
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<double> u(0, 1);
  const auto pick = [&](double lo, double hi) { return lo + (hi - lo) * u(rng); };
  int feasible = 0, more_threads_chosen = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Instance in;
    make_random(rng, in);
    PerformanceModel& m = in.model;
    m.train_threads = 1;
    m.compute = {.a = std::abs(m.train.a) * pick(0.1, 1.2), .b = pick(0, 50), .m = pick(-120, 500)};
    m.input = {.p0 = pick(0, 0.05), .p1 = pick(1e-4, 0.05)};
    const int counts = 2 + static_cast<int>(rng() % 2);
    for (int i = 1; i < counts; ++i) {
      ThreadCountFit f{.threads = 1 << i, .train = m.train, .compute = m.compute};
      // Scaling a down and c up keeps T_train positive wherever the base model is.
      f.train.a *= pick(0.3, 1.0);
      f.train.c = std::max(0.0, m.train.c) + pick(0, 0.01);
      f.compute.a *= pick(0.3, 1.0);
      m.more_threads.push_back(f);
    }
    in.request.space.thread_counts = m.measured_threads();
    if (rng() % 2 == 0) in.request.space.thread_counts.pop_back();
    const bool slurm = in.cost->options().target == Target::kSlurm;
    if (slurm && rng() % 2 == 0)
      in.request.space.max_data_workers = 1 + static_cast<int>(rng() % 3);
    if (!set_random_deadline(rng, in)) continue;
    const std::string what = fmt::format("trial {}: {} threads {} D<={}", trial, in.description,
                                         fmt::join(in.request.space.thread_counts, ","),
                                         in.request.space.max_data_workers);
    feasible += expect_exhaustive_in_both_modes(in, what, [&](const PlanResult& want) {
      for (const Scored& x : want.ranked) {
        const auto& t = in.request.space.thread_counts;
        EXPECT_NE(std::find(t.begin(), t.end(), x.first.threads), t.end()) << what;
      }
      if (!want.ranked.empty()) more_threads_chosen += want.ranked.front().first.threads > 1;
    });
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(feasible, 50);
  EXPECT_GE(more_threads_chosen, 10);
}

// Profiled at 1 and 2 threads: a deadline one thread cannot meet takes the second thread and
// the second vCPU it can use; with one profiled thread the plan never goes above one vCPU's
// worth, and a thread count that was not profiled is refused.
TEST(Planner, ChoosesTheProfiledThreadCountTheDeadlineNeeds) {
  PerformanceModel m = realistic_model();  // mb_per_vcpu 1769
  m.train_threads = 1;
  // Two threads: 5 % slower at the same share (the second thread has no vCPU of its own
  // below 1769 MB), but they can use two vCPUs.
  m.more_threads.push_back({.threads = 2, .train = {.a = 1.995, .b = 4, .m = 60, .c = 0.004}});
  const CostModel cost(CostModelOptions{.model = &m, .target = Target::kSlurm, .epochs = 5});
  PlanRequest req{.deadline_s = 1e9, .alternatives = 3};
  req.space.max_workers = 1;
  req.space.batch_sizes = {128};
  req.space.thread_counts = {1, 2};
  const PlanResult relaxed = plan(cost, req);
  ASSERT_TRUE(relaxed.feasible);
  EXPECT_EQ(relaxed.ranked.front().first.threads, 1);  // a core for one thread is cheapest
  EXPECT_LE(relaxed.ranked.front().first.memory_mb, 1769);
  // Faster than one thread at one vCPU allows: two threads above 1769 MB.
  const double one_vcpu = cost.predict({1, 1769, 1, 128, 128, 0, 1}).total_s;
  req.deadline_s = 0.8 * one_vcpu;
  const PlanResult tight = plan(cost, req);
  expect_same(tight, exhaustive_plan(cost, req), "tight");
  ASSERT_TRUE(tight.feasible);
  EXPECT_EQ(tight.ranked.front().first.threads, 2);
  EXPECT_GT(tight.ranked.front().first.memory_mb, 1769);
  EXPECT_LE(tight.ranked.front().first.memory_mb, 2 * 1769);
  const std::vector<Setting> emitted = planned_settings(tight.ranked.front().first, Target::kSlurm);
  const auto threads = std::find_if(emitted.begin(), emitted.end(), [](const Setting& x) {
    return x.key == "cluster.blas_threads";
  });
  ASSERT_NE(threads, emitted.end());
  EXPECT_EQ(std::get<std::int64_t>(threads->value), 2);
  // One profiled thread: never above one vCPU's worth, and that deadline is out of reach.
  req.space.thread_counts = {1};
  const PlanResult one = plan(cost, req);
  EXPECT_FALSE(one.feasible);
  ASSERT_TRUE(one.fastest);
  EXPECT_LE(one.fastest->first.memory_mb, 1769);
  req.space.thread_counts = {4};
  expect_input_error([&] { plan(cost, req); }, {"profiled at 1, 2 BLAS thread(s), not 4"});
  // A model that does not record its thread count plans for the config's count only.
  PerformanceModel old = realistic_model();
  const CostModel old_cost(CostModelOptions{.model = &old, .target = Target::kSlurm});
  req.space.thread_counts = {2};
  expect_input_error([&] { plan(old_cost, req); },
                     {"does not record the BLAS threads", "cluster.blas_threads = 1 only, not 2"});
  expect_input_error(
      [&] {
        old_cost.validate({1, 1769, 1, 128, 128, 0, 2}, PlanSpace{});
      },
      {"2 BLAS threads lie outside the space's thread counts"});
}

TEST(Planner, MarginIsTheNinetiethPercentileOfTheHeldOutShortfall) {
  EXPECT_EQ(margin_from_held_out({}).points, 0u);
  EXPECT_EQ(margin_from_held_out({}).fraction, 0);
  // (predicted - measured) / measured = -0.5: measured twice the prediction, a shortfall of 1.
  std::vector<double> errors(9, 0.1);  // over-predictions need no margin
  errors.push_back(-0.5);
  EXPECT_EQ(margin_from_held_out(errors).fraction, 0);  // 1 of 10 above the 90th percentile
  errors.push_back(-0.2);                               // shortfall 0.25
  const DeadlineMargin two = margin_from_held_out(errors);
  EXPECT_EQ(two.points, 11u);
  EXPECT_DOUBLE_EQ(two.fraction, 0.25);  // nearest rank ceil(9.9) = 10 of 11
}

TEST(Planner, RejectsBadRequests) {
  const PerformanceModel m = realistic_model();
  const CostModel cost(CostModelOptions{.model = &m, .s3 = &real_table()});
  const auto with = [](auto change) {
    PlanRequest r{.deadline_s = 60};
    change(r);
    return r;
  };
  const auto fails = [&](const PlanRequest& r, std::initializer_list<std::string> needles) {
    expect_input_error([&] { plan(cost, r); }, needles);
    expect_input_error([&] { exhaustive_plan(cost, r); }, needles);
  };
  fails(with([](PlanRequest& r) { r.deadline_s = -5; }), {"deadline must be positive, got -5 s"});
  fails(with([](PlanRequest& r) { r.deadline_s = 0; }), {"deadline must be positive"});
  fails(with([](PlanRequest& r) { r.deadline_s = std::nan(""); }), {"deadline must be positive"});
  fails(with([](PlanRequest& r) { r.space.batch_sizes.clear(); }), {"batch sizes is empty"});
  fails(with([](PlanRequest& r) { r.space.batch_sizes = {32, 0}; }), {"at least 1, got 0"});
  fails(with([](PlanRequest& r) { r.space.min_workers = 8, r.space.max_workers = 4; }),
        {"workers 8..4"});
  fails(with([](PlanRequest& r) { r.space.min_memory_mb = 2048, r.space.max_memory_mb = 1024; }),
        {"memory 2048..1024 MB"});
  fails(with([](PlanRequest& r) { r.space.memory_step_mb = 0; }), {"memory step", "got 0"});
  fails(with([](PlanRequest& r) { r.alternatives = -1; }), {"alternatives", "-1"});
  fails(with([](PlanRequest& r) { r.margin = -0.1; }), {"the margin must be >= 0, got -0.1"});
  fails(with([](PlanRequest& r) { r.space.max_global_batch = 8; }),
        {"the global batch cap 8 is below the smallest batch a worker can take (16)"});
  fails(with([](PlanRequest& r) { r.space.nonaggregator_batch_ratio = -1; }),
        {"non-aggregator batch ratio must be >= 0"});
  fails(with([](PlanRequest& r) { r.space.max_workers = 10000; }), {"combinations", "at most"});

  PerformanceModel pole = realistic_model();
  pole.train.m = -500;
  const CostModel bad(CostModelOptions{.model = &pole, .s3 = &real_table()});
  expect_input_error([&] { plan(bad, PlanRequest{.deadline_s = 60}); },
                     {"pole at M = 500 MB", "128..10240"});

  PerformanceModel negative = realistic_model();
  negative.train.c = -10;  // below zero everywhere
  const CostModel odd(CostModelOptions{.model = &negative, .s3 = &real_table()});
  expect_input_error([&] { plan(odd, PlanRequest{.deadline_s = 60}); },
                     {"predicts -9.8 s per iteration", "refit"});

  PerformanceModel slurm_model = realistic_model();
  slurm_model.sync.rows.push_back({.workers = 8, .memory_mb = {1024}, .seconds = {0.1}});
  const CostModel slurm(CostModelOptions{.model = &slurm_model, .target = Target::kSlurm});
  PlanRequest only_unmeasured{.deadline_s = 60};
  only_unmeasured.space.min_workers = 2;
  only_unmeasured.space.max_workers = 4;
  expect_input_error([&] { plan(slurm, only_unmeasured); }, {"measured: 8", "2..4"});

  // Data workers: SLURM only, and only with a model that prices the input pipeline.
  fails(with([](PlanRequest& r) { r.space.max_data_workers = 2; }),
        {"data workers (up to 2) are planned on the SLURM target only"});
  PlanRequest workers{.deadline_s = 60};
  workers.space.max_data_workers = 2;
  expect_input_error([&] { plan(slurm, workers); },
                     {"has no input-pipeline cost", "profile and fit again"});
  PerformanceModel input_pole = slurm_model;
  input_pole.compute = {.a = 1, .b = 0, .m = -300, .c = 0};
  input_pole.input = {.p0 = 0, .p1 = 0.001};
  const CostModel pole_in(CostModelOptions{.model = &input_pole, .target = Target::kSlurm});
  expect_input_error([&] { plan(pole_in, workers); }, {"T_c", "pole at M = 300 MB"});
  expect_input_error(
      [&] {
        cost.predict({1, 1024, 1, 32, 32, 1});
      },
      {"data-service workers are planned on the SLURM target only"});
}

TEST(Planner, ReportsTheFastestWhenNothingMeetsTheDeadline) {
  const PerformanceModel m = realistic_model();
  const CostModel cost(
      CostModelOptions{.model = &m, .target = Target::kLambda, .epochs = 5, .s3 = &real_table()});
  PlanRequest req{.deadline_s = 0.5};
  req.space.max_workers = 4;
  req.space.memory_step_mb = 64;
  const PlanResult r = plan(cost, req);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(r.ranked.empty());
  ASSERT_TRUE(r.fastest.has_value());
  expect_same(r, exhaustive_plan(cost, req), "infeasible");
}

}  // namespace
}  // namespace conflux::plan
