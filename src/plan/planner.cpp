#include "conflux/plan/planner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "conflux/core/elapsed.hpp"
#include "conflux/core/error.hpp"
#include "plan_space.hpp"
#include "planner_search.hpp"

namespace conflux::plan {

// The space, its sinks and the search are this file's implementation (src/plan private).
using namespace detail;

namespace {

auto order_key(const Scored& s) {
  return std::tie(s.second.cost_usd, s.second.total_s, s.first.workers, s.first.memory_mb,
                  s.first.aggregators, s.first.aggregator_batch, s.first.nonaggregator_batch,
                  s.first.data_workers, s.first.threads);
}

auto speed_key(const Scored& s) {
  return std::tie(s.second.total_s, s.second.cost_usd, s.first.workers, s.first.memory_mb,
                  s.first.aggregators, s.first.aggregator_batch, s.first.nonaggregator_batch,
                  s.first.data_workers, s.first.threads);
}

PlanResult finish(std::vector<Scored> ranked, const std::optional<Scored>& fastest) {
  PlanResult r;
  r.ranked = std::move(ranked);
  r.feasible = !r.ranked.empty();
  if (!r.feasible) r.fastest = fastest;
  return r;
}

}  // namespace

bool cheaper(const Scored& x, const Scored& y) noexcept {
  return order_key(x) < order_key(y);
}

bool faster(const Scored& x, const Scored& y) noexcept {
  return speed_key(x) < speed_key(y);
}

namespace {

// The grid itself: worker and memory ranges, the batch list, at most kMaxMemoryPoints sizes.
void validate_space(const PlanSpace& s) {
  CONFLUX_REQUIRE(s.min_workers >= 1 && s.min_workers <= s.max_workers,
                  "workers {}..{}: need 1 <= min <= max", s.min_workers, s.max_workers);
  CONFLUX_REQUIRE(s.min_memory_mb >= 1 && s.min_memory_mb <= s.max_memory_mb,
                  "memory {}..{} MB: need 1 <= min <= max", s.min_memory_mb, s.max_memory_mb);
  CONFLUX_REQUIRE(s.memory_step_mb >= 1, "memory step must be at least 1 MB, got {}",
                  s.memory_step_mb);
  CONFLUX_REQUIRE(!s.batch_sizes.empty(), "the list of batch sizes is empty");
  for (const int b : s.batch_sizes) {
    CONFLUX_REQUIRE(b >= 1, "batch sizes must be at least 1, got {}", b);
  }
  CONFLUX_REQUIRE(s.aggregator_batch >= 0 && s.nonaggregator_batch_ratio >= 0,
                  "the aggregator batch and the non-aggregator batch ratio must be >= 0 (0: "
                  "free), got {} and {}",
                  s.aggregator_batch, s.nonaggregator_batch_ratio);
  const int smallest = s.aggregator_batch > 0
                           ? s.aggregator_batch
                           : *std::min_element(s.batch_sizes.begin(), s.batch_sizes.end());
  CONFLUX_REQUIRE(s.max_data_workers >= 0 && s.max_data_workers <= 4096,
                  "data workers 0..{}: the largest must lie in 0..4096", s.max_data_workers);
  CONFLUX_REQUIRE(s.max_global_batch == 0 || s.max_global_batch >= smallest,
                  "the global batch cap {} is below the smallest batch a worker can take ({}); "
                  "no configuration fits under it",
                  s.max_global_batch, smallest);
  const std::int64_t points =
      (static_cast<std::int64_t>(s.max_memory_mb) - s.min_memory_mb) / s.memory_step_mb + 1;
  CONFLUX_REQUIRE(points <= kMaxMemoryPoints,
                  "memory {}..{} MB in steps of {} MB gives {} sizes; at most {} are supported",
                  s.min_memory_mb, s.max_memory_mb, s.memory_step_mb, points, kMaxMemoryPoints);
}

// The fitted train-time model over the space: no pole, no non-positive compute time.
// The thread counts: positive, and profiled when the model records what it profiled (the plan
// never assumes a parallelism it has not measured).
void validate_threads(const CostModel& model, const PlanSpace& s) {
  const std::vector<int> measured = model.model().measured_threads();
  for (const int t : planned_threads(model, s)) {
    CONFLUX_REQUIRE(t >= 1 && t <= 256, "BLAS thread counts must lie in 1..256, got {}", t);
    // A model that does not record its thread count has one fit: only the config's count.
    CONFLUX_REQUIRE(!measured.empty() || t == model.options().threads,
                    "the model ({}) does not record the BLAS threads it was profiled with: it "
                    "plans for the config's cluster.blas_threads = {} only, not {}; profile with "
                    "--threads to plan over thread counts",
                    model.model().source, model.options().threads, t);
    CONFLUX_REQUIRE(
        measured.empty() || std::find(measured.begin(), measured.end(), t) != measured.end(),
        "the model ({}) was profiled at {} BLAS thread(s), not {}: profile that count "
        "(conflux profile --threads) or plan over the profiled ones",
        model.model().source, fmt::join(measured, ", "), t);
  }
}

void validate_train_time(const TrainTimeModel& t, const PlanSpace& s) {
  // T_train = a (B + b) / (M + m) + c has its pole at M = -m; inside the range it would make
  // predictions infinite and the model meaningless there.
  CONFLUX_REQUIRE(s.min_memory_mb + t.m > 0 || s.max_memory_mb + t.m < 0,
                  "the train-time model T_train = {} (B + {}) / (M + {}) + {} has a pole at M = "
                  "{} MB, inside the memory range {}..{} MB; refit the model or narrow the range",
                  t.a, t.b, t.m, t.c, -t.m, s.min_memory_mb, s.max_memory_mb);
  // A model that predicts a non-positive compute time somewhere in the space (a hand-written
  // or foreign model file; `conflux fit` keeps b and c non-negative) would make the cheapest
  // plan an artefact. Without a pole in the range T_train is monotone in B and in M, so its
  // minimum over the space is at a corner.
  const auto [smallest, largest] = std::minmax_element(s.batch_sizes.begin(), s.batch_sizes.end());
  for (const int batch : {*smallest, *largest}) {
    for (const int memory : {s.min_memory_mb, s.max_memory_mb}) {
      const double at = t.seconds(batch, memory);
      CONFLUX_REQUIRE(at > 0,
                      "the train-time model predicts {:.3g} s per iteration at B = {}, M = {} MB "
                      "(T_train = {} (B + {}) / (M + {}) + {}); refit the model or narrow the "
                      "space",
                      at, batch, memory, t.a, t.b, t.m, t.c);
    }
  }
}

// T_train at every planned thread count.
void validate_train_model(const CostModel& model, const PlanSpace& s) {
  for (const int threads : planned_threads(model, s)) {
    validate_train_time(model.model().train_at(threads), s);
  }
}

// The (W, K, Ba, Bn) combinations: the SLURM target needs measured sync times, and their
// count stays within kMaxCombos.
void validate_combinations(const CostModel& model, const PlanSpace& s) {
  std::uint64_t batches = s.batch_sizes.size();
  const std::uint64_t thread_counts = planned_threads(model, s).size();
  std::uint64_t combos = 0;
  bool any = false;
  for (int w = s.min_workers; w <= s.max_workers; ++w) {
    if (model.options().target == Target::kSlurm && !sync_measured(model.model().sync, w)) continue;
    any = true;
    combos += combos_per_worker_count(model.options().target, w, batches, s.max_data_workers,
                                      thread_counts);
  }
  if (model.options().target == Target::kSlurm) {
    std::string measured;
    for (const auto& row : model.model().sync.rows) {
      measured += fmt::format("{}{}", measured.empty() ? "" : ", ", row.workers);
      CONFLUX_REQUIRE(!row.memory_mb.empty() && row.memory_mb.size() == row.seconds.size() &&
                          std::is_sorted(row.memory_mb.begin(), row.memory_mb.end()),
                      "the sync-time row for {} trainers needs ascending memory sizes and one "
                      "time per size",
                      row.workers);
    }
    CONFLUX_REQUIRE(any,
                    "the SLURM target plans over measured trainer counts (and 1), but none lies "
                    "in {}..{} (measured: {})",
                    s.min_workers, s.max_workers, measured.empty() ? "none" : measured);
  }
  CONFLUX_REQUIRE(combos <= kMaxCombos,
                  "the space has {} (workers, aggregators, batch) combinations; at most {} are "
                  "supported: lower the worker range or give fewer batch sizes",
                  combos, kMaxCombos);
}

// Data workers need the SLURM target and a model that prices the input pipeline.
void validate_data_workers(const CostModel& model, const PlanSpace& s) {
  if (s.max_data_workers == 0) return;
  CONFLUX_REQUIRE(model.options().target == Target::kSlurm,
                  "data workers (up to {}) are planned on the SLURM target only: a Lambda "
                  "function preprocesses its own batches",
                  s.max_data_workers);
  CONFLUX_REQUIRE(model.model().prices_input(),
                  "the performance model ({}) has no input-pipeline cost (T_c and P(B), from a "
                  "profile with batch-build times): it cannot price data workers; profile and "
                  "fit again, or plan without data workers",
                  model.model().source);
  if (model.model().gpu.present()) return;  // no T_c: the local input rate was measured
  for (const int threads : planned_threads(model, s)) {
    const TrainTimeModel& c = model.model().compute_at(threads);
    // The search's bounds need T_c monotone in M, as T_train (validate_train_model).
    CONFLUX_REQUIRE(c.a > 0 && (s.min_memory_mb + c.m > 0 || s.max_memory_mb + c.m < 0),
                    "the compute-time model T_c = {} (B + {}) / (M + {}) + {} at {} thread(s) has "
                    "a pole at M = {} MB inside the memory range {}..{} MB, or none was fitted; "
                    "refit the model or narrow the range",
                    c.a, c.b, c.m, c.c, threads, -c.m, s.min_memory_mb, s.max_memory_mb);
  }
}

// GPU trainers: some batch of the space has measured GPU rates.
void validate_gpu(const CostModel& model, const PlanSpace& s) {
  const GpuTrainerModel& gpu = model.model().gpu;
  std::vector<int> profiled;
  for (const GpuRate& r : gpu.rates) profiled.push_back(r.batch);
  const bool any = std::any_of(s.batch_sizes.begin(), s.batch_sizes.end(),
                               [&](int b) { return gpu.at(b) != nullptr; }) ||
                   (s.aggregator_batch > 0 && gpu.at(s.aggregator_batch) != nullptr);
  CONFLUX_REQUIRE(any,
                  "the model ({}) measured its GPU trainers at batch {} only, none of the "
                  "batches {} planned over; plan over the profiled batches (--batches)",
                  model.model().source, fmt::join(profiled, ", "), fmt::join(s.batch_sizes, ", "));
}

}  // namespace

DeadlineMargin margin_from_held_out(const std::vector<double>& loo_errors) {
  std::vector<double> over;  // measured / predicted - 1: what the prediction fell short by
  for (const double e : loo_errors) {
    if (std::isfinite(e) && e > -1.0) over.push_back(std::max(0.0, -e / (1.0 + e)));
  }
  if (over.empty()) return {};
  std::sort(over.begin(), over.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(over.size())));
  return {.fraction = over[std::max<std::size_t>(rank, 1) - 1], .points = over.size()};
}

void validate_request(const CostModel& model, const PlanRequest& request) {
  CONFLUX_REQUIRE(std::isfinite(request.deadline_s) && request.deadline_s > 0,
                  "deadline must be positive, got {} s", request.deadline_s);
  CONFLUX_REQUIRE(std::isfinite(request.margin) && request.margin >= 0,
                  "the margin must be >= 0, got {}", request.margin);
  CONFLUX_REQUIRE(request.alternatives >= 0 && request.alternatives <= 1000,
                  "alternatives must lie in 0..1000, got {}", request.alternatives);
  validate_space(request.space);
  validate_threads(model, request.space);
  if (model.model().gpu.present()) {
    validate_gpu(model, request.space);
  } else {
    validate_train_model(model, request.space);
  }
  validate_data_workers(model, request.space);
  validate_combinations(model, request.space);
}

PlanResult plan(const CostModel& model, const PlanRequest& request) {
  // GPU trainers have one memory size: every (W, Ba, D) is evaluated, exact by enumeration.
  if (model.model().gpu.present()) return exhaustive_plan(model, request);
  const auto start = SteadyClock::now();
  validate_request(model, request);
  const Grid grid = make_grid(model, request);
  Search search(model, request, grid);
  const auto capacity = static_cast<std::size_t>(request.alternatives) + 1;
  std::vector<Scored> ranked;
  if (request.distinct) {
    DistinctTopN top(capacity, search.combos());
    search.cheapest(top);
    ranked = top.take();
  } else {
    TopN top(capacity);
    search.cheapest(top);
    ranked = top.take();
  }
  Fastest fastest;
  // The fastest configuration is only reported when nothing meets the deadline.
  if (ranked.empty()) search.fastest(fastest);
  PlanResult r = finish(std::move(ranked), fastest.best());
  r.evaluated = search.evaluated();
  r.space_size = space_size(model, grid);
  r.elapsed_s = seconds_since(start);
  return r;
}

PlanResult exhaustive_plan(const CostModel& model, const PlanRequest& request) {
  const auto start = SteadyClock::now();
  validate_request(model, request);
  const Grid grid = make_grid(model, request);
  TopN top(static_cast<std::size_t>(request.alternatives) + 1);
  Fastest fastest;
  std::uint64_t evaluated = 0;
  for_each_combo(model.options().target, grid, [&](const Combo& combo) {
    // Distinct: only the combination's cheapest feasible point competes.
    std::optional<Scored> cheapest;
    for (const int m : grid.memory) {
      Candidate c = combo;
      c.memory_mb = m;
      const Scored s = evaluate(model, c);
      ++evaluated;
      fastest.offer(s);
      if (s.second.total_s > request.budget_s()) continue;
      if (!request.distinct) {
        top.offer(s);
      } else if (!cheapest || cheaper(s, *cheapest)) {
        cheapest = s;
      }
    }
    if (cheapest) top.offer(*cheapest);
  });
  PlanResult r = finish(top.take(), fastest.best());
  r.evaluated = evaluated;
  r.space_size = space_size(model, grid);
  r.elapsed_s = seconds_since(start);
  return r;
}

}  // namespace conflux::plan
