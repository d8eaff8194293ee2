#include "conflux/plan/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "conflux/core/error.hpp"
#include "conflux/core/stats.hpp"

namespace conflux::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Solves the k x k system A x = y (k ≤ 3) by Gaussian elimination with partial pivoting;
// false when it is singular.
template <std::size_t K>
bool solve(std::array<std::array<double, K>, K> a, std::array<double, K> y,
           std::array<double, K>& x) {
  for (std::size_t col = 0; col < K; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < K; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    if (std::abs(a[pivot][col]) < 1e-300) return false;
    std::swap(a[col], a[pivot]);
    std::swap(y[col], y[pivot]);
    for (std::size_t r = col + 1; r < K; ++r) {
      const double f = a[r][col] / a[col][col];
      for (std::size_t c = col; c < K; ++c) a[r][c] -= f * a[col][c];
      y[r] -= f * y[col];
    }
  }
  for (std::size_t i = K; i-- > 0;) {
    double s = y[i];
    for (std::size_t c = i + 1; c < K; ++c) s -= a[i][c] * x[c];
    x[i] = s / a[i][i];
  }
  return true;
}

// For a fixed m the model is linear in (a, a*b, c): T = a B/(M+m) + (a b)/(M+m) + c. Weighted
// least squares with weights 1/T minimises relative errors (times span orders of magnitude).
// `free_b` / `free_c` say which of a*b and c are fitted (the others are 0). Returns the
// weighted residual sum of squares, or infinity when the system is singular.
double linear_fit(const std::vector<SweepPoint>& pts, double m, bool free_b, bool free_c,
                  TrainTimeModel& out) {
  std::array<std::size_t, 3> cols{0, 0, 0};
  std::size_t k = 0;
  cols[k++] = 0;
  if (free_b) cols[k++] = 1;
  if (free_c) cols[k++] = 2;
  std::array<std::array<double, 3>, 3> ata{};
  std::array<double, 3> aty{};
  for (const auto& p : pts) {
    const double inv = 1.0 / (p.memory_mb + m);
    const std::array<double, 3> x{p.batch * inv, inv, 1.0};
    const double w = 1.0 / p.iteration_s;
    for (std::size_t i = 0; i < k; ++i) {
      for (std::size_t j = 0; j < k; ++j) ata[i][j] += w * w * x[cols[i]] * x[cols[j]];
      aty[i] += w * w * x[cols[i]] * p.iteration_s;
    }
  }
  std::array<double, 3> theta{};
  bool ok = false;
  if (k == 1) {
    ok = ata[0][0] > 0;
    if (ok) theta[0] = aty[0] / ata[0][0];
  } else if (k == 2) {
    std::array<double, 2> t{};
    ok = solve<2>({{{ata[0][0], ata[0][1]}, {ata[1][0], ata[1][1]}}}, {aty[0], aty[1]}, t);
    theta = {t[0], t[1], 0};
  } else {
    ok = solve<3>(ata, aty, theta);
  }
  if (!ok) return kInf;
  std::array<double, 3> full{};
  for (std::size_t i = 0; i < k; ++i) full[cols[i]] = theta[i];
  out = TrainTimeModel{};
  out.a = full[0];
  out.b = full[0] != 0 ? full[1] / full[0] : 0;
  out.m = m;
  out.c = full[2];
  double rss = 0;
  for (const auto& p : pts) {
    const double r = (out.seconds(p.batch, p.memory_mb) - p.iteration_s) / p.iteration_s;
    rss += r * r;
  }
  return rss;
}

// The least-squares fit for a fixed m with b ≥ 0 and c ≥ 0 (the form with a constant), by
// active sets: a negative fixed work or a negative constant would predict negative times for
// small batches or large functions, where the planner extrapolates.
double fit_for_m(const std::vector<SweepPoint>& pts, double m, bool with_constant,
                 TrainTimeModel& out) {
  double best = kInf;
  for (const bool free_b : {true, false}) {
    for (const bool free_c : {true, false}) {
      if (free_c && !with_constant) continue;
      TrainTimeModel candidate;
      const double rss = linear_fit(pts, m, free_b, free_c, candidate);
      if (candidate.b < 0 || candidate.c < 0 || !(rss < best)) continue;
      best = rss;
      out = candidate;
    }
  }
  return best;
}

std::vector<SweepPoint> usable(const std::vector<SweepPoint>& points) {
  std::vector<SweepPoint> out;
  for (const auto& p : points) {
    if (!p.out_of_memory && p.iteration_s > 0) out.push_back(p);
  }
  return out;
}

template <typename Predict, typename Refit>
FitQuality quality(const std::vector<SweepPoint>& pts, std::vector<double> measured,
                   Predict predict, Refit refit_without) {
  FitQuality q;
  double mean = 0;
  for (double t : measured) mean += t / static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0;
  std::vector<double> abs_err, loo_abs;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double pred = predict(pts[i]);
    PointError e{pts[i].workers,
                 pts[i].memory_mb,
                 pts[i].batch,
                 measured[i],
                 pred,
                 (pred - measured[i]) / measured[i],
                 0};
    const double loo_pred = refit_without(i);
    e.loo_error = std::isfinite(loo_pred) ? (loo_pred - measured[i]) / measured[i] : kInf;
    ss_res += (pred - measured[i]) * (pred - measured[i]);
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
    abs_err.push_back(std::abs(e.relative_error));
    loo_abs.push_back(std::abs(e.loo_error));
    q.points.push_back(e);
  }
  q.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  q.rmse_s = std::sqrt(ss_res / static_cast<double>(pts.size()));
  q.median_abs_error = median(abs_err);
  q.max_abs_error = abs_err.empty() ? 0 : *std::max_element(abs_err.begin(), abs_err.end());
  q.loo_median_abs_error = median(loo_abs);
  return q;
}

TrainFit fit_train(const std::vector<SweepPoint>& pts, bool with_constant) {
  TrainFit fit;
  fit.form = with_constant ? "a(B+b)/(M+m) + c" : "a(B+b)/(M+m)";
  fit.model = fit_train_time(pts, with_constant);
  std::vector<double> measured;
  for (const auto& p : pts) measured.push_back(p.iteration_s);
  fit.quality = quality(
      pts, measured, [&](const SweepPoint& p) { return fit.model.seconds(p.batch, p.memory_mb); },
      [&](std::size_t i) {
        std::vector<SweepPoint> rest = pts;
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
        try {
          return fit_train_time(rest, with_constant).seconds(pts[i].batch, pts[i].memory_mb);
        } catch (const InputError&) {
          return kInf;  // too few points left to fit: no leave-one-out prediction
        }
      });
  return fit;
}

}  // namespace

TrainTimeModel fit_train_time(const std::vector<SweepPoint>& points, bool with_constant) {
  const std::vector<SweepPoint> pts = usable(points);
  std::set<int> memories, batches;
  for (const auto& p : pts) {
    memories.insert(p.memory_mb);
    batches.insert(p.batch);
  }
  const std::size_t need = with_constant ? 4 : 3;
  CONFLUX_REQUIRE(memories.size() >= 3 && batches.size() >= 2 && pts.size() >= need,
                  "cannot fit T_train: the profile has {} usable point(s) at {} memory size(s) "
                  "and {} batch size(s); it needs ≥ 3 memory sizes, ≥ 2 batch sizes and ≥ {} "
                  "points",
                  pts.size(), memories.size(), batches.size(), need);
  // Variable projection: the model is linear once m is fixed, so search m alone (a 1-D,
  // bracketed search) and solve the rest exactly. m ranges over (-128, 100 max M]: M + m stays
  // positive down to Lambda's smallest function (128 MB), where the planner may extrapolate.
  const double lo = 1.0 - std::min(128, *memories.begin());
  const double span = 100.0 * *memories.rbegin();
  auto objective = [&](double m, TrainTimeModel& model) {
    return fit_for_m(pts, m, with_constant, model);
  };
  const int grid = 400;
  double best_m = lo, best = kInf;
  TrainTimeModel model;
  for (int i = 0; i <= grid; ++i) {
    // Geometric in M + m, from 1 MB above -min M up to 100 x max M.
    const double m = lo - 1 + std::pow(span + 1 - lo, static_cast<double>(i) / grid);
    const double rss = objective(m, model);
    if (rss < best) best = rss, best_m = m;
  }
  // Golden-section refinement between the grid neighbours of the best point.
  const auto to_t = [&](double m) { return std::log(m - lo + 1) / std::log(span + 1 - lo); };
  const auto from_t = [&](double t) { return lo - 1 + std::pow(span + 1 - lo, t); };
  double a = std::max(0.0, to_t(best_m) - 1.0 / grid), b = std::min(1.0, to_t(best_m) + 1.0 / grid);
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 80; ++it) {
    const double c = b - g * (b - a), d = a + g * (b - a);
    TrainTimeModel mc, md;
    if (objective(from_t(c), mc) < objective(from_t(d), md)) {
      b = d;
    } else {
      a = c;
    }
  }
  const double m = from_t(0.5 * (a + b));
  const double rss = objective(m, model);
  CONFLUX_REQUIRE(std::isfinite(rss),
                  "the T_train fit did not converge: the least-squares system is singular "
                  "(are all points at the same batch or memory size?)");
  CONFLUX_REQUIRE(to_t(m) < 0.999,
                  "the T_train fit did not converge: m ran to the end of its range ({:.0f} MB), "
                  "i.e. the measured times hardly fall with memory; was the sweep throttled "
                  "(limits) and long enough (--steps)?",
                  m);
  CONFLUX_REQUIRE(model.a > 0,
                  "the T_train fit did not converge to a usable model: a = {:.3g} ≤ 0, i.e. the "
                  "measured times do not grow with the batch size; measure more steps per point",
                  model.a);
  return model;
}

TransferTimeModel fit_transfer_time(const std::vector<SweepPoint>& points) {
  // The serialisation does not depend on B or W: average each memory size's points first.
  std::map<int, std::pair<double, int>> by_memory;
  for (const auto& p : usable(points)) {
    if (p.transfer_s <= 0) continue;
    by_memory[p.memory_mb].first += p.transfer_s;
    by_memory[p.memory_mb].second += 1;
  }
  CONFLUX_REQUIRE(by_memory.size() >= 2,
                  "cannot fit T_trans = k1 M^k2: it needs transfer times at ≥ 2 memory sizes, "
                  "the profile has {}",
                  by_memory.size());
  // Least squares in log space: log T = log k1 + k2 log M (relative errors, again).
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(by_memory.size());
  for (const auto& [memory, acc] : by_memory) {
    const double x = std::log(memory), y = std::log(acc.first / acc.second);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double k2 = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return TransferTimeModel{std::exp((sy - k2 * sx) / n), k2};
}

namespace {

// Keeps FasDL's form unless asked otherwise or the form with a constant is clearly better:
// a third lower leave-one-out error and at least one point of percentage.
void choose_train_form(FitResult& r, TrainForm form) {
  const double fasdl_err = r.fasdl.quality.loo_median_abs_error;
  const double const_err = r.with_constant.quality.loo_median_abs_error;
  const bool clearly_better = const_err < 0.67 * fasdl_err && fasdl_err - const_err > 0.01;
  r.chose_constant = form == TrainForm::kConstant || (form == TrainForm::kAuto && clearly_better);
  if (form == TrainForm::kAuto) {
    r.choice = clearly_better
                   ? fmt::format(
                         "the form with a constant fits clearly better (leave-one-out "
                         "median error {:.1f} % against {:.1f} % for FasDL's): kept it",
                         100 * const_err, 100 * fasdl_err)
                   : fmt::format(
                         "FasDL's form kept (leave-one-out median error {:.1f} %; with a "
                         "constant {:.1f} %, not clearly better)",
                         100 * fasdl_err, 100 * const_err);
  } else {
    r.choice =
        fmt::format("{} form kept as asked (--form)", r.chose_constant ? "constant" : "FasDL's");
  }
}

// T_train at a point as the planner evaluates it: its thread count's fit, the share capped at
// what the threads can use (uncapped when the profile did not record threads).
double capped_train(const PerformanceModel& model, const SweepPoint& p) {
  const double cap = p.threads > 0 ? p.threads * model.mb_per_vcpu : p.memory_mb;
  return model.train_at(p.threads).seconds(p.batch, std::min<double>(p.memory_mb, cap));
}

// The sync table, per (W, M) over the batches: each step's time beyond the fitted T_train,
// i.e. the measured sync plus the wait for the other throttled trainers. That is what a step
// costs beyond compute; when only multi-trainer points exist (`had_single` false), the
// measured sync alone.
SyncTimeTable fit_sync_table(const std::vector<SweepPoint>& pts, const PerformanceModel& model,
                             bool had_single) {
  SyncSums sync;
  for (const auto& p : pts) {
    if (p.workers < 2) continue;
    const double beyond = had_single ? p.iteration_s + p.sync_s - capped_train(model, p) : p.sync_s;
    auto& acc = sync[p.workers][p.memory_mb];
    acc.first += std::max(0.0, beyond);
    acc.second += 1;
  }
  return sync_table_of_means(sync);
}

// The compute alone at a profiled point. A rank of at most one vCPU runs its compute and its
// own batch builds in turn out of one CPU budget: the measured compute time includes the
// pauses the builds cost it, and the compute alone is T_train - P(B) / share (never above the
// measured compute time). With more than a vCPU the builds overlap the compute, whose measured
// time is then its own.
double compute_alone(const SweepPoint& p, const InputCostModel& input, double mb_per_vcpu) {
  const double share = p.memory_mb / mb_per_vcpu;
  if (share > 1) return p.compute_s;
  const double alone = p.iteration_s - input.seconds(p.batch) / share;
  return std::clamp(alone, 0.05 * p.compute_s, p.compute_s);
}

// T_c at one thread count from its T_train points; nullopt (and the note) when it fails.
std::optional<TrainFit> fit_compute(const std::vector<SweepPoint>& train_pts,
                                    const InputCostModel& input, double mb_per_vcpu,
                                    bool with_constant, std::string& note) {
  std::vector<SweepPoint> compute = train_pts;
  for (SweepPoint& p : compute) p.iteration_s = compute_alone(p, input, mb_per_vcpu);
  try {
    return fit_train(compute, with_constant);
  } catch (const InputError& e) {
    note = fmt::format("T_c (the compute alone) at {} thread(s) could not be fitted: {}",
                       train_pts.front().threads, e.what());
    return std::nullopt;
  }
}

// P(B), and T_c at every thread count, when the profile measured builds.
void fit_input(const Sweep& sweep, const std::vector<SweepPoint>& base_pts,
               const std::vector<std::vector<SweepPoint>>& more_pts, FitResult& r) {
  if (sweep.builds.empty()) {
    r.input_note =
        "the profile holds no batch-build times (an older conflux profile): no data "
        "workers can be priced";
    return;
  }
  const InputCostModel input = fit_input_cost(sweep.builds);
  r.compute = fit_compute(base_pts, input, sweep.mb_per_vcpu, r.chose_constant, r.input_note);
  if (!r.compute) return;
  for (std::size_t i = 0; i < more_pts.size(); ++i) {
    r.more_threads[i].compute =
        fit_compute(more_pts[i], input, sweep.mb_per_vcpu, r.chose_constant, r.input_note);
    if (!r.more_threads[i].compute) {
      r.compute.reset();
      return;
    }
  }
  r.model.input = input;
  r.model.compute = r.compute->model;
  for (std::size_t i = 0; i < more_pts.size(); ++i) {
    r.model.more_threads[i].compute = r.more_threads[i].compute->model;
  }
}

// fit_train on the points of one thread count, its errors naming the count.
TrainFit fit_at(int threads, double mb_per_vcpu, const std::vector<SweepPoint>& pts,
                bool with_constant) {
  if (threads == 0) return fit_train(pts, with_constant);  // not recorded: nothing left out
  try {
    return fit_train(pts, with_constant);
  } catch (const InputError& e) {
    CONFLUX_INPUT_ERROR(
        "at {} BLAS thread(s) (points above {:.0f} MB left out: the threads cannot "
        "use more): {}",
        threads, threads * mb_per_vcpu, e.what());
  }
}

// The points T_train is fitted on at `threads`: the single-trainer points of that count (with
// several throttled trainers part of each one's pauses shows up as the others' wait in the
// gradient sync), else all of them, at most threads x mb_per_vcpu MB (beyond, the threads
// cannot use the share: the planner caps T_train there; threads 0, not recorded: all).
// Counts the points left out.
std::vector<SweepPoint> train_points(const std::vector<SweepPoint>& pts, int threads,
                                     double mb_per_vcpu, std::size_t& beyond) {
  std::vector<SweepPoint> out;
  const bool single = std::any_of(pts.begin(), pts.end(), [&](const auto& p) {
    return p.threads == threads && p.workers == 1;
  });
  for (const auto& p : pts) {
    if (p.threads != threads || (single && p.workers != 1)) continue;
    if (threads > 0 && p.memory_mb > threads * mb_per_vcpu) {
      ++beyond;
      continue;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

// The profiled thread counts, ascending; {0} for a profile that did not record them.
// InputError when profiles with and without thread counts were merged.
std::vector<int> profiled_threads(const std::vector<SweepPoint>& pts, const std::string& source) {
  std::vector<int> threads;
  for (const auto& p : pts) threads.push_back(p.threads);
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  CONFLUX_REQUIRE(threads.front() > 0 || threads.size() == 1,
                  "{}: points with and without a recorded thread count (a profile of an older "
                  "conflux profile merged with a newer one); profile again with --threads",
                  source);
  return threads;
}

InputCostModel fit_input_cost(const std::vector<BuildPoint>& builds) {
  const bool one_batch = std::all_of(builds.begin(), builds.end(), [&](const BuildPoint& b) {
    return b.batch == builds.front().batch;
  });
  double s11 = 0, s1b = 0, sbb = 0, s1y = 0, sby = 0;
  for (const BuildPoint& b : builds) {
    const double w = 1.0 / (b.seconds * b.seconds);
    s11 += w, s1b += w * b.batch, sbb += w * b.batch * b.batch;
    s1y += w * b.seconds, sby += w * b.batch * b.seconds;
  }
  std::array<double, 2> x{};
  if (!one_batch && solve<2>({{{s11, s1b}, {s1b, sbb}}}, {s1y, sby}, x) && x[0] >= 0 && x[1] > 0) {
    return {x[0], x[1]};
  }
  return {0, sby / sbb};  // through the origin
}

FitResult fit_sweep(const Sweep& sweep, TrainForm form, const std::string& source) {
  if (sweep.device == "gpu") return fit_gpu_sweep(sweep, source);
  const std::vector<SweepPoint> pts = usable(sweep.points);
  CONFLUX_REQUIRE(!pts.empty(), "{}: the profile holds no measured point", source);
  const std::vector<int> threads = profiled_threads(pts, source);
  FitResult r;
  PerformanceModel& m = r.model;
  m.mb_per_vcpu = sweep.mb_per_vcpu;
  const std::vector<SweepPoint> base_pts =
      train_points(pts, threads.front(), sweep.mb_per_vcpu, r.beyond_share);
  r.fasdl = fit_at(threads.front(), sweep.mb_per_vcpu, base_pts, false);
  r.with_constant = fit_at(threads.front(), sweep.mb_per_vcpu, base_pts, true);
  choose_train_form(r, form);
  m.train = r.chose_constant ? r.with_constant.model : r.fasdl.model;
  m.train_threads = threads.front();
  // The margin's sample: the leave-one-out errors of every kept T_train fit.
  const auto keep_loo_errors = [&m](const TrainFit& f) {
    for (const PointError& e : f.quality.points) {
      if (std::isfinite(e.loo_error)) m.train_loo_errors.push_back(e.loo_error);
    }
  };
  keep_loo_errors(r.chose_constant ? r.with_constant : r.fasdl);
  // Every further thread count gets its own T_train in the kept form.
  std::vector<std::vector<SweepPoint>> more_pts;
  for (std::size_t i = 1; i < threads.size(); ++i) {
    more_pts.push_back(train_points(pts, threads[i], sweep.mb_per_vcpu, r.beyond_share));
    r.more_threads.push_back(
        {threads[i], fit_at(threads[i], sweep.mb_per_vcpu, more_pts.back(), r.chose_constant), {}});
    m.more_threads.push_back({threads[i], r.more_threads.back().train.model, {}});
    keep_loo_errors(r.more_threads.back().train);
  }
  m.transfer = fit_transfer_time(pts);
  std::vector<double> transfer_measured;
  for (const auto& p : pts) transfer_measured.push_back(p.transfer_s);
  r.transfer_quality = quality(
      pts, transfer_measured, [&](const SweepPoint& p) { return m.transfer.seconds(p.memory_mb); },
      [&](std::size_t) { return kInf; });
  const bool single =
      std::any_of(pts.begin(), pts.end(), [](const auto& p) { return p.workers == 1; });
  m.sync = fit_sync_table(pts, m, single);
  m.gradient_mb = sweep.gradient_mb;
  m.epoch_samples = sweep.epoch_samples;
  m.dataset = sweep.dataset;
  m.source = source;
  fit_input(sweep, base_pts, more_pts, r);
  r.builds = sweep.builds;
  return r;
}

SyncTimeTable sync_table_of_means(const SyncSums& sums) {
  SyncTimeTable table;
  for (const auto& [workers, by_memory] : sums) {
    SyncTimeTable::Row row{workers, {}, {}};
    for (const auto& [memory, acc] : by_memory) {
      row.memory_mb.push_back(memory);
      row.seconds.push_back(acc.first / acc.second);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace conflux::plan
