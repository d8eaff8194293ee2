#pragma once
/// @file planner_search.hpp
/// The exact planner's best-first branch and bound (private to src/plan): see docs/planning.md
/// for the bounds and the proof that it returns what exhaustive search returns.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plan_space.hpp"

namespace conflux::plan::detail {

// Bounds are computed with other floating-point operations than predict(), so a bound may
// exceed a prediction it should bound by rounding. Every bound is lowered by kSlack times the
// magnitude of its terms (predict's rounding error is below 1e-13 of that), so that pruning
// stays sound; it costs a few more evaluations near ties, never a wrong answer.
constexpr double kSlack = 1e-9;
// Intervals of at most this many memory sizes are evaluated point by point: a bound costs
// about as much as two predictions.
constexpr int kLeafPoints = 4;

// A NaN (from infinite terms) bounds nothing: it becomes -inf, so the node is never pruned.
inline double certified(double x, double magnitude) {
  const double lowered = x - kSlack * (magnitude + std::abs(x));
  return std::isnan(lowered) ? -kInf : lowered;
}

class Search {
 public:
  Search(const CostModel& model, const PlanRequest& request, const Grid& grid)
      : model_(model),
        m_(model.model()),
        target_(model.options().target),
        deadline_(request.budget_s()),
        grid_(grid) {
    const std::size_t n = grid_.memory.size();
    mem_.resize(n);
    trans_.resize(n);
    mtrans_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      mem_[i] = grid_.memory[i];
      trans_[i] = target_ == Target::kLambda ? m_.transfer.seconds(mem_[i]) : 0.0;  // as predict()
      mtrans_[i] = mem_[i] * trans_[i];
    }
    if (target_ == Target::kLambda) {
      prepare_lambda();
    } else {
      prepare_slurm();
    }
    for_each_combo(target_, grid_, [&](const Combo& c) {
      const double iterations = static_cast<double>(model_.iterations(c));
      const bool lambda = target_ == Target::kLambda;
      combos_.push_back({c, iterations, iterations * model_.storage_cost_per_iteration(c),
                         lambda ? c.aggregators - 1 : 0,
                         lambda ? 0 : slurm_breaks_index(c.workers)});
    });
  }

  std::uint64_t evaluated() const { return evaluated_; }

  std::size_t combos() const { return combos_.size(); }

  // The cheapest feasible configurations (TopN: over all points; DistinctTopN: one per
  // combination).
  template <class Sink>
  void cheapest(Sink& sink) {
    run(sink, /*by_cost=*/true);
  }
  // The fastest configuration, feasible or not.
  void fastest(Fastest& sink) { run(sink, /*by_cost=*/false); }

 private:
  struct ComboData {
    Combo combo;
    double iterations;
    double storage_usd;  // iterations x storage cost per iteration, as predict() computes it
    int slice;           // Lambda: the S3 slice of its chunk size (K - 1)
    int breaks;          // index of its break points in breaks_
  };
  // The S3 times of one chunk size at every knot.
  struct Slice {
    std::vector<double> up, down;
  };
  struct Bound {
    double cost;  // certified lower bound of the cost
    double time;  // certified lower bound of the total time
  };
  struct Node {
    double key;
    std::uint32_t combo;
    std::int32_t lo, hi;
    bool operator>(const Node& o) const { return key > o.key; }
  };

  void prepare_lambda() {
    const S3TransferTable& s3 = *model_.options().s3;
    knots_ = s3.memory_knots();
    int max_k = 1;
    for (const int w : grid_.workers) max_k = std::max(max_k, w);
    for (int k = 1; k <= max_k; ++k) {
      const double chunk = m_.gradient_mb / k;
      Slice s;
      for (const double x : knots_) {
        s.up.push_back(s3.upload_seconds(x, chunk));
        s.down.push_back(s3.download_seconds(x, chunk));
      }
      slices_.push_back(std::move(s));
    }
    // Where every grid point lies between the knots, for interpolating the slices.
    seg_.resize(mem_.size());
    weight_.resize(mem_.size());
    for (std::size_t i = 0; i < mem_.size(); ++i) {
      const double x = mem_[i];
      if (knots_.size() == 1 || x <= knots_.front()) {
        seg_[i] = 0;
        weight_[i] = 0;
      } else if (x >= knots_.back()) {
        seg_[i] = static_cast<int>(knots_.size()) - 2;
        weight_[i] = 1;
      } else {
        const auto j = std::upper_bound(knots_.begin(), knots_.end(), x) - knots_.begin() - 1;
        seg_[i] = static_cast<int>(j);
        weight_[i] = (x - knots_[j]) / (knots_[j + 1] - knots_[j]);
      }
    }
    breaks_.push_back(knots_);
  }

  void prepare_slurm() {
    // Break points: the sync table's memory sizes (linear between them) and the memory sizes
    // where one more core is needed (the cost is linear in time between them).
    std::vector<double> cores;
    for (int c = 1; c * m_.mb_per_vcpu < grid_.memory.back(); ++c)
      cores.push_back(c * m_.mb_per_vcpu);
    for (const int w : grid_.workers) {
      std::vector<double> b = cores;
      for (const auto& row : m_.sync.rows) {
        if (row.workers == w && w > 1)
          b.insert(b.end(), row.memory_mb.begin(), row.memory_mb.end());
      }
      std::sort(b.begin(), b.end());
      b.erase(std::unique(b.begin(), b.end()), b.end());
      slurm_break_of_.emplace_back(w, static_cast<int>(breaks_.size()));
      breaks_.push_back(std::move(b));
    }
  }

  int slurm_breaks_index(int workers) const {
    for (const auto& [w, index] : slurm_break_of_) {
      if (w == workers) return index;
    }
    return 0;
  }

  double up_at(const Slice& s, std::size_t i) const {
    const auto j = static_cast<std::size_t>(seg_[i]);
    if (knots_.size() == 1) return s.up[0];
    return (1 - weight_[i]) * s.up[j] + weight_[i] * s.up[j + 1];
  }
  double down_at(const Slice& s, std::size_t i) const {
    const auto j = static_cast<std::size_t>(seg_[i]);
    if (knots_.size() == 1) return s.down[0];
    return (1 - weight_[i]) * s.down[j] + weight_[i] * s.down[j + 1];
  }

  // Lower bounds of T_train and of M T_train over [ml, mh]: a (B + b) / (M' + m) with
  // M' = min(M, cap) is monotone on an interval without the pole (validate_request keeps it
  // out of the space), and a (B + b) M / (M' + m) and c M are monotone on each side of the cap,
  // so each is least at an end or at the cap.
  struct TrainBound {
    double t, mt, mt_magnitude;
  };
  TrainBound train_bound(int batch, int threads, double ml, double mh) const {
    const TrainTimeModel& tr = m_.train_at(threads);
    const double cap = model_.compute_cap_mb(threads);
    const double scaled = tr.a * (batch + tr.b);
    const auto work_at = [&](double mem) { return scaled * mem / (std::min(mem, cap) + tr.m); };
    double work = std::min(work_at(ml), work_at(mh));
    if (ml < cap && cap < mh) work = std::min(work, work_at(cap));
    const double fixed = std::min(tr.c * ml, tr.c * mh);
    return {std::min(model_.train_seconds(batch, ml, threads),
                     model_.train_seconds(batch, mh, threads)),
            work + fixed, std::abs(work) + std::abs(fixed)};
  }

  Bound bound(const ComboData& d, std::int32_t lo, std::int32_t hi) const {
    return target_ == Target::kLambda ? lambda_bound(d, lo, hi) : slurm_bound(d, lo, hi);
  }

  Bound lambda_bound(const ComboData& d, std::int32_t lo, std::int32_t hi) const {
    const Combo& c = d.combo;
    const auto ilo = static_cast<std::size_t>(lo);
    const auto ihi = static_cast<std::size_t>(hi);
    const double ml = mem_[ilo];
    const double mh = mem_[ihi];
    const Slice& s = slices_[static_cast<std::size_t>(d.slice)];
    const double w = c.workers;
    const double k = c.aggregators;
    const bool two_roles = c.aggregators < c.workers;
    // Communication is piecewise linear in M with the S3 knots: its least value lies at an
    // end or a knot, and on each piece [p, q] (comm >= its least end value v) M comm >=
    // min(p v, q v).
    const auto comm_a = [&](double up, double down) { return (k + 1) * up + (w - 1 + k) * down; };
    const auto comm_n = [&](double up, double down) { return k * up + k * down; };
    double prev_m = ml;
    double prev_a = comm_a(up_at(s, ilo), down_at(s, ilo));
    double prev_n = comm_n(up_at(s, ilo), down_at(s, ilo));
    double min_a = prev_a, min_n = prev_n;
    double mmin_a = kInf, mmin_n = kInf;
    const auto piece = [&](double m, double va, double vn) {
      const double ca = std::min(prev_a, va);
      const double cn = std::min(prev_n, vn);
      mmin_a = std::min(mmin_a, std::min(prev_m * ca, m * ca));
      mmin_n = std::min(mmin_n, std::min(prev_m * cn, m * cn));
      min_a = std::min(min_a, va);
      min_n = std::min(min_n, vn);
      prev_m = m;
      prev_a = va;
      prev_n = vn;
    };
    for (auto j = static_cast<std::size_t>(std::upper_bound(knots_.begin(), knots_.end(), ml) -
                                           knots_.begin());
         j < knots_.size() && knots_[j] < mh; ++j) {
      piece(knots_[j], comm_a(s.up[j], s.down[j]), comm_n(s.up[j], s.down[j]));
    }
    piece(mh, comm_a(up_at(s, ihi), down_at(s, ihi)), comm_n(up_at(s, ihi), down_at(s, ihi)));

    const double trans = std::min(trans_[ilo], trans_[ihi]);
    const double mtrans = std::min(mtrans_[ilo], mtrans_[ihi]);
    const TrainBound ta = train_bound(c.aggregator_batch, c.threads, ml, mh);
    double t = certified(ta.t + trans + min_a, std::abs(ta.t) + std::abs(trans) + std::abs(min_a));
    double mt =
        certified(ta.mt + mtrans + mmin_a, ta.mt_magnitude + std::abs(mtrans) + std::abs(mmin_a));
    if (two_roles) {
      const TrainBound tn = train_bound(c.nonaggregator_batch, c.threads, ml, mh);
      t = std::max(
          t, certified(tn.t + trans + min_n, std::abs(tn.t) + std::abs(trans) + std::abs(min_n)));
      mt = std::max(mt, certified(tn.mt + mtrans + mmin_n,
                                  tn.mt_magnitude + std::abs(mtrans) + std::abs(mmin_n)));
    }
    const PricesSection& p = model_.options().prices;
    const double total = certified(d.iterations * t, 0);
    // cost = W (M / 1024) total price + W ceil(total / max) request + storage, and
    // M total = iterations (M t): bound M t, not M and t apart, which would be loose.
    const double compute = certified(w / 1024 * model_.gb_second_price() * d.iterations * mt, 0);
    const double request = w * std::ceil(total / p.lambda_max_seconds) * p.lambda_request;
    const double cost = compute + request + d.storage_usd;
    return {certified(cost, std::abs(compute) + std::abs(request) + std::abs(d.storage_usd)),
            total};
  }

  // Lower bound of the step without sync over [ml, mh], given T_train's lower bound there.
  // With D data workers the step is max(T_c', x T_train / (x + Delta)) (T_c' = min(T_c,
  // T_train), Delta = T_train - T_c'), increasing in T_c' and T_train and decreasing in Delta:
  // least at T_c' and T_train's lower bounds and Delta's upper bound (docs/planning.md).
  double step_bound(const Combo& c, double ml, double mh, double train_lb) const {
    if (c.data_workers == 0) return train_lb;
    const int b = c.aggregator_batch;
    const int t = c.threads;
    const double train_hi =
        std::max(model_.train_seconds(b, ml, t), model_.train_seconds(b, mh, t));
    const double compute_lb =
        std::min({model_.compute_seconds(b, ml, t), model_.compute_seconds(b, mh, t), train_lb});
    const double delta_hi = std::max(0.0, train_hi - compute_lb);
    const double x = model_.data_workers_seconds(c.workers, c.data_workers, b);
    return std::max(compute_lb, x * train_lb / (x + delta_hi));
  }

  Bound slurm_bound(const ComboData& d, std::int32_t lo, std::int32_t hi) const {
    const Combo& c = d.combo;
    const auto ilo = static_cast<std::size_t>(lo);
    const auto ihi = static_cast<std::size_t>(hi);
    const double ml = mem_[ilo];
    const double mh = mem_[ihi];
    // The measured sync time is linear between its memory sizes: least at an end or a knot.
    double sync = std::min(m_.sync.seconds(c.workers, ml), m_.sync.seconds(c.workers, mh));
    const std::vector<double>& b = breaks_[static_cast<std::size_t>(d.breaks)];
    for (auto j = std::upper_bound(b.begin(), b.end(), ml); j != b.end() && *j < mh; ++j) {
      sync = std::min(sync, m_.sync.seconds(c.workers, *j));
    }
    const double trans = std::min(trans_[ilo], trans_[ihi]);
    const double step = step_bound(c, ml, mh, train_bound(c.aggregator_batch, c.threads, ml, mh).t);
    const double t =
        certified(step + trans + sync, std::abs(step) + std::abs(trans) + std::abs(sync));
    const double total = certified(d.iterations * t, 0);
    // cost = (W cores(M) + D worker_threads) (total / 3600) price with cores nondecreasing in
    // M and positive (both ends: a foreign model's total may be negative).
    const double data_cores = static_cast<double>(c.data_workers) * model_.options().worker_threads;
    const auto cores_at = [&](std::int32_t i) {
      return c.workers * model_.cores(grid_.memory[static_cast<std::size_t>(i)]) + data_cores;
    };
    const double cost = model_.options().prices.slurm_core_hour / 3600 *
                        std::min(cores_at(lo) * total, cores_at(hi) * total);
    return {certified(cost, 0), total};
  }

  // Where to cut [lo, hi]: at the break point nearest its middle (so that the parts are
  // linear pieces and the bounds tight), else in the middle. Returns the last index of the
  // left part.
  std::int32_t split(const ComboData& d, std::int32_t lo, std::int32_t hi) const {
    const std::vector<double>& b = breaks_[static_cast<std::size_t>(d.breaks)];
    const double ml = mem_[static_cast<std::size_t>(lo)];
    const double mh = mem_[static_cast<std::size_t>(hi)];
    const double middle = (ml + mh) / 2;
    double best = kInf;
    double at = 0;
    for (auto j = std::upper_bound(b.begin(), b.end(), ml); j != b.end() && *j < mh; ++j) {
      if (std::abs(*j - middle) < best) {
        best = std::abs(*j - middle);
        at = *j;
      }
    }
    if (best == kInf) return lo + (hi - lo) / 2;
    // The last grid point at or below the break.
    const double step = grid_.memory.size() > 1 ? grid_.memory[1] - grid_.memory[0] : 1;
    auto g = static_cast<std::int32_t>(std::floor((at - grid_.memory.front()) / step));
    g = std::clamp(g, lo, hi - 1);
    while (g + 1 < hi && mem_[static_cast<std::size_t>(g) + 1] <= at) ++g;
    while (g > lo && mem_[static_cast<std::size_t>(g)] > at) --g;
    return g;
  }

  template <class Sink>
  void run(Sink& sink, bool by_cost) {
    std::vector<Node> heap;
    heap.reserve(combos_.size());
    const auto last = static_cast<std::int32_t>(mem_.size()) - 1;
    // Pushes the node unless its bounds show that nothing in it can enter the answer.
    const auto keep = [&](std::uint32_t combo, std::int32_t lo, std::int32_t hi) {
      const Bound b = bound(combos_[combo], lo, hi);
      if (by_cost && b.time > deadline_) return false;  // nothing in it meets the deadline
      const double key = by_cost ? b.cost : b.time;
      if (key > sink.threshold(combo)) return false;
      heap.push_back({key, combo, lo, hi});
      return true;
    };
    for (std::uint32_t i = 0; i < combos_.size(); ++i) keep(i, 0, last);
    const auto later = std::greater<Node>();
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const Node node = heap.back();
      heap.pop_back();
      // The least bound left cannot enter: neither can anything else.
      if (node.key > sink.threshold()) break;
      // Nothing in this node can enter, though others may (a distinct sink's combination has
      // a cheaper point already).
      if (node.key > sink.threshold(node.combo)) continue;
      const ComboData& d = combos_[node.combo];
      if (node.hi - node.lo + 1 <= kLeafPoints) {
        for (std::int32_t i = node.lo; i <= node.hi; ++i) {
          Candidate c = d.combo;
          c.memory_mb = grid_.memory[static_cast<std::size_t>(i)];
          const Scored s = evaluate(model_, c);
          ++evaluated_;
          if (!by_cost || s.second.total_s <= deadline_) sink.offer(node.combo, s);
        }
        continue;
      }
      const std::int32_t cut = split(d, node.lo, node.hi);
      if (keep(node.combo, node.lo, cut)) std::push_heap(heap.begin(), heap.end(), later);
      if (keep(node.combo, cut + 1, node.hi)) std::push_heap(heap.begin(), heap.end(), later);
    }
  }

  const CostModel& model_;
  const PerformanceModel& m_;
  Target target_;
  double deadline_;
  const Grid& grid_;
  std::vector<double> mem_, trans_, mtrans_;  // per grid point: M, T_trans(M), M T_trans(M)
  std::vector<ComboData> combos_;
  std::vector<double> knots_;  // Lambda: the S3 memory knots
  std::vector<Slice> slices_;  // Lambda: per K
  std::vector<int> seg_;       // Lambda: per grid point, the knot segment and the weight in it
  std::vector<double> weight_;
  std::vector<std::vector<double>> breaks_;          // where to cut intervals (one list per table)
  std::vector<std::pair<int, int>> slurm_break_of_;  // SLURM: W -> index in breaks_
  std::uint64_t evaluated_ = 0;
};

}  // namespace conflux::plan::detail
