#pragma once
/// @file plan_space.hpp
/// The planner's search space after validation (private to src/plan): the grid of worker
/// counts, batch sizes and memory sizes, its (W, K, Ba, Bn) combinations, and the ranking
/// sinks both the branch-and-bound search and the exhaustive plan offer points to.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "conflux/plan/planner.hpp"

namespace conflux::plan::detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Limits that keep the search's memory bounded (about 100 bytes per combination).
constexpr std::uint64_t kMaxCombos = 4'000'000;
constexpr std::int64_t kMaxMemoryPoints = 1'000'000;

// The space after validation: the worker counts searched, the batch list (ascending, no
// duplicates) and the memory grid.
struct Grid {
  std::vector<int> workers;
  std::vector<int> batches;
  std::vector<int> memory;
  int max_global_batch = 0;  // the batch rules of PlanSpace
  int aggregator_batch = 0;
  int nonaggregator_batch_ratio = 0;
  int max_data_workers = 0;  // D in 0..this (SLURM)
  std::vector<int> threads;  // BLAS thread counts (ascending)
  bool gpu = false;          // GPU trainers: one memory size, the profiled batches
};

// One (W, K, Ba, Bn); memory_mb is left to the search.
using Combo = Candidate;

/// Whether the sync-time table measured `workers` trainers (1 needs no measurement).
bool sync_measured(const SyncTimeTable& sync, int workers);
/// (W, K, Ba, Bn) combinations of one worker count.
std::uint64_t combos_per_worker_count(Target target, int workers, std::uint64_t batches,
                                      int max_data_workers, std::uint64_t thread_counts);
/// The thread counts a request plans over: its own, else the options' count.
std::vector<int> planned_threads(const CostModel& model, const PlanSpace& space);
/// The validated request's grid.
Grid make_grid(const CostModel& model, const PlanRequest& request);
/// Points in the whole space.
std::uint64_t space_size(const CostModel& model, const Grid& g);
/// predict(), refusing a NaN: the search orders and compares predictions.
Scored evaluate(const CostModel& model, const Candidate& c);

// Whether (W, K, Ba, Bn) keeps the grid's batch rules.
inline bool keeps_batch_rules(const Grid& g, int w, int k, int ba, int bn) {
  if (g.aggregator_batch > 0 && ba != g.aggregator_batch) return false;
  if (k < w && g.nonaggregator_batch_ratio > 0 &&
      static_cast<std::int64_t>(bn) !=
          static_cast<std::int64_t>(g.nonaggregator_batch_ratio) * ba) {
    return false;
  }
  const std::int64_t global =
      static_cast<std::int64_t>(k) * ba + static_cast<std::int64_t>(w - k) * bn;
  return g.max_global_batch == 0 || global <= g.max_global_batch;
}

template <class F>
void for_each_combo(Target target, const Grid& g, F&& f) {
  for (const int w : g.workers) {
    for (int k = target == Target::kSlurm ? w : 1; k <= w; ++k) {
      for (const int ba : g.batches) {
        if (k == w) {
          if (!keeps_batch_rules(g, w, k, ba, ba)) continue;
          for (const int t : g.threads) {
            for (int d = 0; d <= g.max_data_workers; ++d) f(Combo{w, 0, k, ba, ba, d, t, g.gpu});
          }
          continue;
        }
        for (const int t : g.threads) {
          if (g.nonaggregator_batch_ratio > 0) {  // Bn = r Ba, in the batch list or not
            const int bn = g.nonaggregator_batch_ratio * ba;
            if (keeps_batch_rules(g, w, k, ba, bn)) f(Combo{w, 0, k, ba, bn, 0, t});
            continue;
          }
          for (const int bn : g.batches) {
            if (bn >= ba && keeps_batch_rules(g, w, k, ba, bn)) f(Combo{w, 0, k, ba, bn, 0, t});
          }
        }
      }
    }
  }
}

// The sinks the search offers evaluated points to. Each names the least key (cost or time)
// that can no longer enter its answer, overall (threshold()) and for the points of one
// combination (threshold(combo)); the search discards nodes whose bound exceeds it.

// The best `capacity` feasible configurations by cheaper(), kept sorted.
class TopN {
 public:
  explicit TopN(std::size_t capacity) : capacity_(capacity) {}
  // Worst cost that can still enter (+inf until full).
  double threshold() const {
    return kept_.size() < capacity_ ? kInf : kept_.back().second.cost_usd;
  }
  double threshold(std::uint32_t /*combo*/) const { return threshold(); }
  void offer(std::uint32_t /*combo*/, const Scored& s) { offer(s); }
  void offer(const Scored& s) {
    if (kept_.size() == capacity_ && !cheaper(s, kept_.back())) return;
    kept_.insert(std::upper_bound(kept_.begin(), kept_.end(), s, cheaper), s);
    if (kept_.size() > capacity_) kept_.pop_back();
  }
  std::vector<Scored> take() { return std::move(kept_); }

 private:
  std::size_t capacity_;
  std::vector<Scored> kept_;
};

// The best `capacity` combinations, each by its cheapest feasible point offered, ordered by
// cheaper(): the top `capacity` of {cheapest offered point of each combination}.
class DistinctTopN {
 public:
  DistinctTopN(std::size_t capacity, std::size_t combos)
      : capacity_(capacity), least_cost_(combos, kInf) {}
  double threshold() const {
    return kept_.size() < capacity_ ? kInf : kept_.back().point.second.cost_usd;
  }
  // A point of `combo` costlier than the cheapest one offered is not its combination's
  // cheapest point, so it cannot enter either.
  double threshold(std::uint32_t combo) const { return std::min(threshold(), least_cost_[combo]); }
  void offer(std::uint32_t combo, const Scored& s) {
    least_cost_[combo] = std::min(least_cost_[combo], s.second.cost_usd);
    const auto same =
        std::find_if(kept_.begin(), kept_.end(), [&](const Entry& e) { return e.combo == combo; });
    if (same != kept_.end()) {
      // Listed: s replaces the entry when it is the combination's cheaper point.
      if (!cheaper(s, same->point)) return;
      kept_.erase(same);
    } else if (kept_.size() == capacity_ && !cheaper(s, kept_.back().point)) {
      // Not listed: its earlier points (if any) were beaten by the last entry, and so is s.
      return;
    }
    const auto at =
        std::upper_bound(kept_.begin(), kept_.end(), s,
                         [](const Scored& x, const Entry& e) { return cheaper(x, e.point); });
    kept_.insert(at, Entry{combo, s});
    if (kept_.size() > capacity_) kept_.pop_back();
  }
  std::vector<Scored> take() {
    std::vector<Scored> out;
    out.reserve(kept_.size());
    for (const Entry& e : kept_) out.push_back(e.point);
    return out;
  }

 private:
  struct Entry {
    std::uint32_t combo;
    Scored point;
  };
  std::size_t capacity_;
  std::vector<double> least_cost_;  // per combination: the least cost offered (+inf: none)
  std::vector<Entry> kept_;         // sorted by cheaper(), distinct combinations
};

// The fastest configuration by faster().
class Fastest {
 public:
  double threshold() const { return best_ ? best_->second.total_s : kInf; }
  double threshold(std::uint32_t /*combo*/) const { return threshold(); }
  void offer(std::uint32_t /*combo*/, const Scored& s) { offer(s); }
  void offer(const Scored& s) {
    if (!best_ || faster(s, *best_)) best_ = s;
  }
  const std::optional<Scored>& best() const { return best_; }

 private:
  std::optional<Scored> best_;
};

// x lowered by the slack for rounding, relative to the magnitude of the terms behind it.

}  // namespace conflux::plan::detail
