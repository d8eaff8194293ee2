#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "conflux/plan/plan_output.hpp"
#include "plan_output_detail.hpp"

namespace conflux::plan::detail {
namespace {

// "GPU-bound" or "input-bound".
const char* bottleneck(const Prediction& p) {
  return p.input_bound ? "input-bound" : "GPU-bound";
}

// The feed of the chosen configuration: where its samples come from and which side limits.
std::string feed_text(const Candidate& c, const CostModel& model) {
  const CostModel::GpuFeed f =
      model.gpu_feed(c.workers, c.data_workers, c.aggregator_batch, c.memory_mb);
  return fmt::format(
      "  per GPU: {:.0f} samples/s, {}: the GPU's ceiling {:.0f} samples/s{}, the input {:.0f} "
      "samples/s (local {:.0f} + data workers {:.0f})\n",
      f.rate, f.input_bound ? "input-bound" : "GPU-bound", f.ceiling,
      c.workers > 1 ? " (with the gradient sync)" : "", f.local + f.workers, f.local, f.workers);
}

// The data workers around the choice: D - 2 .. D + 2 (one per GPU each step), beyond the
// searched range marked, so that the user sees where the bottleneck moves.
std::string neighbours_text(const Scored& chosen, const CostModel& model,
                            const PlanRequest& request) {
  const auto& [best, p] = chosen;
  std::string out = fmt::format(
      "\ndata workers per GPU around the choice:\n{:>8} {:>4} {:>10} "
      "{:>12} {:>8} {:>12} {:>12} {:>10}\n",
      "per GPU", "D", "samples/s", "bottleneck", "offload", "time", "cost", "vs best");
  for (int step = -2; step <= 2; ++step) {
    Candidate c = best;
    c.data_workers = best.data_workers + step * best.workers;
    if (c.data_workers < 0) continue;
    const Prediction q = model.predict(c);
    const bool outside = c.data_workers > request.space.max_data_workers;
    const bool late = q.total_s > request.budget_s();
    out += fmt::format("{:>8g} {:>4} {:>10.0f} {:>12} {:>8.3f} {:>12} {:>12} {:>10}{}\n",
                       static_cast<double>(c.data_workers) / c.workers, c.data_workers,
                       static_cast<double>(q.samples_per_iteration) / q.iteration_s, bottleneck(q),
                       q.offload_ratio, format_seconds(q.total_s), format_usd(q.cost_usd),
                       step == 0 ? "chosen" : percent(q.cost_usd, p.cost_usd),
                       outside ? "  (beyond --max-data-workers)"
                       : late  ? "  (misses the deadline)"
                               : "");
  }
  return out;
}

}  // namespace

std::string gpu_text(const CostModel& model, const PlanSpace& space) {
  const CostModelOptions& o = model.options();
  const PerformanceModel& m = model.model();
  std::string out = fmt::format(
      "trainers: one GPU each at ${:g} per GPU-hour (prices.slurm_gpu_hour, its host cores "
      "included); data workers at ${:g} per core-hour (prices.slurm_core_hour)\n",
      o.prices.slurm_gpu_hour, o.prices.slurm_core_hour);
  for (const GpuRate& r : m.gpu.rates) {
    out += fmt::format("  batch {}: GPU ceiling {:g} samples/s, local input {:g} samples/s",
                       r.batch, r.ceiling_samples_s, r.local_samples_s);
    if (m.input.p1 > 0) {
      out += fmt::format(", a data-worker thread {:.0f} samples/s (P(B) = {:.3g} ms)",
                         r.batch / m.input.seconds(r.batch), 1e3 * m.input.seconds(r.batch));
    }
    out += "\n";
  }
  if (space.max_data_workers == 0) {
    out += m.input.p1 > 0 ? "input: no data workers (--max-data-workers 0)\n"
                          : "input: no data workers (the model has no batch-build time P(B))\n";
  } else {
    out += fmt::format("input: 0..{} data workers of {} thread{} (cluster.worker_threads)\n",
                       space.max_data_workers, o.worker_threads, plural(o.worker_threads));
  }
  return out;
}

std::string render_chosen_gpu(const PlanResult& result, const CostModel& model,
                              const PlanRequest& request) {
  const auto& [best, p] = result.ranked.front();
  std::string out = fmt::format("\nchosen: {}\n", describe(best));
  out += fmt::format("  throughput: {:.0f} samples/s ({})\n",
                     static_cast<double>(p.samples_per_iteration) / p.iteration_s, bottleneck(p));
  out += feed_text(best, model);
  out +=
      fmt::format("  time: {} iterations x {} = {} ({:.1f} % of the deadline to spare)\n",
                  grouped(p.iterations), format_seconds(p.iteration_s), format_seconds(p.total_s),
                  100 * (request.deadline_s - p.total_s) / request.deadline_s);
  if (best.data_workers > 0) {
    out += fmt::format(
        "  input: the data workers build {:.1f} % of the batches (data.offload_ratio {:.3f})\n",
        100 * p.offload_ratio, emitted_ratio(p.offload_ratio));
  }
  const int cores = best.data_workers * model.options().worker_threads;
  out += fmt::format(
      "  cost: {} = GPU-hours {} ({} GPU{} x {}) + core-hours {} ({} data-worker core{})\n",
      format_usd(p.cost_usd), format_usd(p.gpu_cost_usd), best.workers, plural(best.workers),
      format_seconds(p.total_s), format_usd(p.compute_cost_usd), cores, plural(cores));
  out += neighbours_text(result.ranked.front(), model, request);
  return out;
}

}  // namespace conflux::plan::detail
