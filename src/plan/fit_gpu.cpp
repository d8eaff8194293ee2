#include <fmt/format.h>

#include <map>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/plan/fit.hpp"

namespace conflux::plan {

namespace {

// Per batch, the mean over the single-trainer points (any --memory: a GPU trainer is not
// throttled, so sizes only repeat the measurement).
std::vector<GpuRate> gpu_rates(const std::vector<SweepPoint>& pts, const std::string& source) {
  std::map<int, std::pair<GpuRate, int>> by_batch;
  for (const SweepPoint& p : pts) {
    if (p.workers != 1 || p.out_of_memory) continue;
    CONFLUX_REQUIRE(p.compute_s > 0 && p.iteration_s > 0,
                    "{}: the GPU point at batch {} has compute {} s and step {} s; both must be "
                    "positive",
                    source, p.batch, p.compute_s, p.iteration_s);
    auto& [rate, n] = by_batch[p.batch];
    rate.batch = p.batch;
    // The compute alone, with the batch already staged, is the GPU's ceiling; the whole step
    // at offload ratio 0 is paced by the slower of it and the trainer's own preprocessing,
    // so B / step is the local rate, or a lower bound of it at least as high as the ceiling
    // when the GPU is the bottleneck (then no worker is needed either way).
    rate.ceiling_samples_s += p.batch / p.compute_s;
    rate.local_samples_s += p.batch / p.iteration_s;
    ++n;
  }
  CONFLUX_REQUIRE(!by_batch.empty(),
                  "{}: a profile of GPU trainers needs points with one trainer (--workers 1): "
                  "the compute ceiling and the local input rate come from them",
                  source);
  std::vector<GpuRate> out;
  for (auto& [batch, acc] : by_batch) {
    GpuRate r = acc.first;
    r.ceiling_samples_s /= acc.second;
    r.local_samples_s /= acc.second;
    out.push_back(r);
  }
  return out;
}

// Per trainer count W >= 2 and size, the measured sync (the trainers are not throttled, so
// there is no wait for a paused peer to take out).
SyncTimeTable gpu_sync(const std::vector<SweepPoint>& pts) {
  SyncSums sync;
  for (const SweepPoint& p : pts) {
    if (p.workers < 2 || p.out_of_memory) continue;
    auto& acc = sync[p.workers][p.memory_mb];
    acc.first += p.sync_s;
    acc.second += 1;
  }
  return sync_table_of_means(sync);
}

}  // namespace

FitResult fit_gpu_sweep(const Sweep& sweep, const std::string& source) {
  FitResult r;
  PerformanceModel& m = r.model;
  m.gpu.rates = gpu_rates(sweep.points, source);
  m.sync = gpu_sync(sweep.points);
  m.mb_per_vcpu = sweep.mb_per_vcpu;
  m.gradient_mb = sweep.gradient_mb;
  m.epoch_samples = sweep.epoch_samples;
  m.dataset = sweep.dataset;
  m.source = source;
  if (sweep.builds.empty()) {
    r.input_note = "the profile holds no batch-build times: no data workers can be priced";
  } else {
    m.input = fit_input_cost(sweep.builds);
  }
  r.builds = sweep.builds;
  return r;
}

std::string render_gpu_fit_report(const FitResult& r) {
  const PerformanceModel& m = r.model;
  std::string out =
      "GPU trainers (train.device): per batch, the compute ceiling (B / compute, "
      "the batch already staged) and the local input rate (B / step at offload "
      "ratio 0)\n   batch  ceiling samples/s  local samples/s  alone\n";
  for (const GpuRate& g : m.gpu.rates) {
    out += fmt::format("{:8d}  {:17.1f}  {:15.1f}  {}\n", g.batch, g.ceiling_samples_s,
                       g.local_samples_s,
                       g.local_samples_s < g.ceiling_samples_s ? "input-bound" : "GPU-bound");
  }
  for (const auto& row : m.sync.rows) {
    out += fmt::format("gradient sync, W = {}:", row.workers);
    for (std::size_t i = 0; i < row.memory_mb.size(); ++i) {
      out += fmt::format(" {:.2f} ms;", 1e3 * row.seconds[i]);
    }
    out += "\n";
  }
  if (m.input.p1 <= 0) return out + fmt::format("input: {}\n", r.input_note);
  out += fmt::format(
      "P(B) (one batch on one preprocessing thread) = p0 + p1 B: p0 = {:.4g} ms, p1 = {:.4g} ms "
      "per sample;",
      1e3 * m.input.p0, 1e3 * m.input.p1);
  for (const BuildPoint& b : r.builds) {
    out += fmt::format(" B {}: {:.0f} samples/s per thread;", b.batch, b.batch / b.seconds);
  }
  return out + "\n";
}

}  // namespace conflux::plan
