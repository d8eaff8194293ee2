#include "conflux/plan/fit.hpp"

#include <fmt/format.h>

#include <string>

namespace conflux::plan {

namespace {

// T_c and P(B): what building batches costs a trainer and a data-service worker.
std::string render_input_fit(const FitResult& r) {
  if (!r.compute) return fmt::format("\ninput: {}\n", r.input_note);
  const TrainFit& c = *r.compute;
  const FitQuality& q = c.quality;
  std::string out = fmt::format(
      "\nT_c (compute alone, the kept form) = a (B + b) / (M + m) + c: a = {:.6g}, b = {:.4g}, "
      "m = {:.4g}, c = {:.4g}; median |error| = {:.1f} %, leave-one-out median = {:.1f} %\n",
      c.model.a, c.model.b, c.model.m, c.model.c, 100 * q.median_abs_error,
      100 * q.loo_median_abs_error);
  const InputCostModel& in = r.model.input;
  for (const ThreadsFit& t : r.more_threads) {
    out += fmt::format("T_c at {} BLAS threads: a = {:.6g}, b = {:.4g}, m = {:.4g}, c = {:.4g}\n",
                       t.threads, t.compute->model.a, t.compute->model.b, t.compute->model.m,
                       t.compute->model.c);
  }
  out += fmt::format(
      "P(B) (one batch on one preprocessing thread) = p0 + p1 B: p0 = {:.4g} ms, p1 = {:.4g} ms "
      "per sample;",
      1e3 * in.p0, 1e3 * in.p1);
  for (const BuildPoint& b : r.builds) {
    out += fmt::format(" B {} measured {:.2f} ms, fitted {:.2f} ms;", b.batch, 1e3 * b.seconds,
                       1e3 * in.seconds(b.batch));
  }
  return out + "\n";
}

}  // namespace

std::string render_fit_report(const FitResult& r) {
  if (r.model.gpu.present()) return render_gpu_fit_report(r);
  std::string out;
  const auto form_block = [&](const char* name, const TrainFit& f) {
    const FitQuality& q = f.quality;
    out += fmt::format(
        "{} = {}: a = {:.6g} s*MB/sample, b = {:.4g} samples, m = {:.4g} MB, c = {:.4g} s\n"
        "  R^2 = {:.4f}, RMSE = {:.3f} ms, median |error| = {:.1f} %, max = {:.1f} %, "
        "leave-one-out median = {:.1f} %\n",
        name, f.form, f.model.a, f.model.b, f.model.m, f.model.c, q.r2, 1e3 * q.rmse_s,
        100 * q.median_abs_error, 100 * q.max_abs_error, 100 * q.loo_median_abs_error);
  };
  form_block("T_train", r.fasdl);
  form_block("T_train", r.with_constant);
  out += fmt::format("choice: {}\n\n", r.choice);
  const auto table = [&](const TrainFit& f) {
    out += "   W  memory MB  batch  measured ms  fitted ms  error %  leave-one-out %\n";
    for (const auto& e : f.quality.points) {
      out += fmt::format("{:4d}  {:9d}  {:5d}  {:11.3f}  {:9.3f}  {:+7.1f}  {:+15.1f}\n", e.workers,
                         e.memory_mb, e.batch, 1e3 * e.measured_s, 1e3 * e.predicted_s,
                         100 * e.relative_error, 100 * e.loo_error);
    }
  };
  if (!r.more_threads.empty()) {
    out += fmt::format("(at {} BLAS thread{}, the smallest profiled count)\n",
                       r.model.train_threads, r.model.train_threads == 1 ? "" : "s");
  }
  table(r.chose_constant ? r.with_constant : r.fasdl);
  for (const ThreadsFit& t : r.more_threads) {
    out += "\n";
    form_block(fmt::format("T_train at {} BLAS threads", t.threads).c_str(), t.train);
    table(t.train);
  }
  if (r.beyond_share > 0) {
    out += fmt::format(
        "{} point(s) above threads x {:.0f} MB left out of T_train: the threads cannot use "
        "that share (the planner caps T_train there)\n",
        r.beyond_share, r.model.mb_per_vcpu);
  }
  const auto& t = r.model.transfer;
  out += fmt::format(
      "\nT_trans = k1 M^k2: k1 = {:.4g} s, k2 = {:.3f}; R^2 = {:.4f}, median |error| = {:.1f} %, "
      "max = {:.1f} %\n",
      t.k1, t.k2, r.transfer_quality.r2, 100 * r.transfer_quality.median_abs_error,
      100 * r.transfer_quality.max_abs_error);
  if (r.model.sync.rows.empty()) {
    out += "gradient sync: no point with W ≥ 2 (a plan may use 1 worker only)\n";
  }
  for (const auto& row : r.model.sync.rows) {
    out += fmt::format("gradient sync, W = {}:", row.workers);
    for (std::size_t i = 0; i < row.memory_mb.size(); ++i) {
      out += fmt::format(" {} MB {:.2f} ms;", row.memory_mb[i], 1e3 * row.seconds[i]);
    }
    out += " (interpolated linearly in M)\n";
  }
  return out + render_input_fit(r);
}

}  // namespace conflux::plan
