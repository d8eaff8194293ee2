// conflux-bench scaling: how the data service's throughput grows with the number of worker
// ranks. One trainer whose compute step is a SIMULATED GPU STEP (a sleep) is fed by 0, 1, ..
// N workers (N = world size - 1) under the heavy CIFAR-10 augmentation; for each worker count
// the offload ratio is the best of a small sweep around the even split, or --ratio.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "conflux/data/io/catalog.hpp"
#include "pipeline_harness.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options : PipelineSettings {
  Options() { resolution = 64; }  // upscaled, so that preprocessing is the bottleneck
  int steps = 30;
  double ratio = -1;  // < 0: sweep
  double sweep_step = 0.15;
  int rounds = 3;
};

// The ratios tried with `workers` workers: the even split w/(w+1), which is right when every
// rank preprocesses equally fast, and one step either side, since on shared cores they do not.
std::vector<double> candidate_ratios(int workers, const Options& opt) {
  if (workers == 0) return {0.0};
  if (opt.ratio >= 0) return {opt.ratio};
  const double even = static_cast<double>(workers) / (workers + 1);
  std::vector<double> out;
  for (const double r : {even - opt.sweep_step, even, even + opt.sweep_step}) {
    const double clamped = std::round(std::clamp(r, 0.0, 1.0) * 1000) / 1000;
    if (std::find(out.begin(), out.end(), clamped) == out.end()) out.push_back(clamped);
  }
  return out;
}

}  // namespace

int run_scaling(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc(
      "conflux-bench scaling options (mpirun -np N+1: 1 trainer, 0..N workers)");
  desc.add_options()("help,h", "show this help")(
      "steps", po::value(&opt.steps)->default_value(opt.steps), "measured steps per run")(
      "ratio", po::value(&opt.ratio),
      "offload ratio for every worker count > 0 (default: best of a sweep around the even "
      "split workers/(workers+1))")(
      "sweep-step", po::value(&opt.sweep_step)->default_value(opt.sweep_step, "0.15"),
      "the sweep tries the even split and this much either side")(
      "rounds", po::value(&opt.rounds)->default_value(opt.rounds),
      "repetitions of every run; medians are reported");
  opt.add_pipeline_options(desc);
  const auto vm = parse_scenario_options("scaling", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(opt.batch >= 1 && opt.steps >= 1 && opt.rounds >= 1 && opt.warmup >= 0,
                  "scaling: --batch, --steps and --rounds must be at least 1, --warmup >= 0");
  CONFLUX_REQUIRE(!vm->count("ratio") || (opt.ratio >= 0 && opt.ratio <= 1),
                  "scaling: --ratio {} is not in [0, 1]", opt.ratio);
  CONFLUX_REQUIRE(opt.sweep_step >= 0 && opt.sweep_step <= 1,
                  "scaling: --sweep-step {} is not in [0, 1]", opt.sweep_step);
  CONFLUX_REQUIRE(opt.gpu_step_ms >= 0, "scaling: --gpu-step-ms must not be negative");
  const comm::Communicator service = world.split(0, world.rank());
  const int max_workers = world.size() - 1;
  const data::InMemorySource dataset(data::load_dataset("cifar10", opt.data_dir).train);
  const data::SampleTransform heavy(heavy_cifar_pipeline(opt.resolution), dataset.info().shape);
  const bool root = world.rank() == 0;
  if (root) {
    fmt::print(
        "scaling: 1 trainer + 0..{} worker rank(s), CIFAR-10 heavy augmentation at {}x{}, "
        "batch {}, {} measured steps per run, median of {} round(s)\n"
        "trainer compute = SIMULATED GPU STEP (sleep {} ms per step, not real compute)\n\n",
        max_workers, opt.resolution, opt.resolution, opt.batch, opt.steps, opt.rounds,
        opt.gpu_step_ms);
  }

  Report report("scaling", common);
  report.add_parameters(*vm);
  report.set_parameter("max_workers", max_workers);
  Table sweep("sweep", "every run (the chosen ratio per worker count is marked)",
              {"workers", {"ratio", 3}, {"samples/s", 0}, "chosen"});
  Table& table = report.add_table(
      Table("scaling",
            "samples/s at the trainer against worker ranks (speedup against 0 workers; per rank = "
            "speedup / preprocessing ranks, the trainer included)",
            {"workers",
             {"ratio", 3},
             {"samples/s", 0},
             {"speedup", 2},
             {"per rank", 2},
             {"wait ms/step", 2},
             {"worker batches %", 0},
             "fallbacks"}));
  double base = 0;
  for (int workers = 0; workers <= max_workers; ++workers) {
    const std::vector<double> ratios = candidate_ratios(workers, opt);
    // Rounds interleave the candidate ratios, so drift in the machine's load hits them alike.
    std::vector<std::vector<PipelineRun>> runs(ratios.size());
    for (int round = 0; round < opt.rounds; ++round) {
      for (std::size_t i = 0; i < ratios.size(); ++i) {
        PipelineRunOptions o = opt.run_options(service, workers, dataset, heavy);
        o.steps = opt.steps;
        o.offload_ratio = ratios[i];
        runs[i].push_back(run_pipeline(o));
      }
    }
    if (!root) continue;
    std::vector<double> rates;
    for (const auto& r : runs) {
      std::vector<double> per_round;
      for (const auto& run : r) per_round.push_back(run.samples_per_s);
      rates.push_back(median(per_round));
    }
    const std::size_t best =
        static_cast<std::size_t>(std::max_element(rates.begin(), rates.end()) - rates.begin());
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      sweep.add_row({workers, ratios[i], rates[i], i == best ? "*" : ""});
    }
    // The figures of the chosen ratio's median round.
    std::vector<const PipelineRun*> chosen;
    for (const auto& run : runs[best]) chosen.push_back(&run);
    std::sort(chosen.begin(), chosen.end(),
              [](const auto* a, const auto* b) { return a->samples_per_s < b->samples_per_s; });
    const PipelineRun& run = *chosen[chosen.size() / 2];
    double wait = 0;
    for (const StepTiming& s : run.steps) wait += s.wait_s;
    const auto& stats = run.stats;
    const std::size_t total = stats.local + stats.worker + stats.fallback;
    if (workers == 0) base = rates[best];
    const double speedup = base > 0 ? rates[best] / base : 0;
    table.add_row({workers, ratios[best], rates[best], speedup, speedup / (workers + 1),
                   1e3 * wait / static_cast<double>(run.steps.size()),
                   total > 0 ? 100.0 * static_cast<double>(stats.worker) / total : 0.0,
                   stats.fallback});
  }
  if (!root) return 0;
  table.print();
  if (opt.ratio < 0 && max_workers > 0) {
    fmt::print("\n");
    sweep.print();
  }
  fmt::print("\n");
  report.add_table(std::move(sweep));
  const std::vector<double> workers = table.numbers("workers");
  const std::vector<double> rates = table.numbers("samples/s");
  std::vector<double> linear;
  const double bound = opt.gpu_step_ms > 0 ? 1e3 * opt.batch / opt.gpu_step_ms
                                           : std::numeric_limits<double>::infinity();
  // Perfect scaling: every preprocessing rank as fast as the trainer alone, until the
  // SIMULATED GPU step becomes the bottleneck.
  for (const double w : workers) linear.push_back(std::min(base * (w + 1), bound));
  report.set_summary("samples_per_s_0_workers", base);
  report.set_summary("samples_per_s_max_workers", rates.back());
  report.set_summary("speedup_max_workers", base > 0 ? rates.back() / base : 0.0);
  report.set_summary("simulated_gpu_step_bound_samples_per_s", bound);
  std::vector<std::pair<double, std::string>> tics;
  for (const double w : workers) tics.emplace_back(w, fmt::format("{}", w));
  Plot plot{.title = fmt::format("data-service scaling: heavy CIFAR-10 at {}x{}, batch {}, "
                                 "SIMULATED GPU step {} ms",
                                 opt.resolution, opt.resolution, opt.batch, opt.gpu_step_ms),
            .xlabel = "worker ranks",
            .ylabel = "samples/s at the trainer",
            .xtics = tics};
  plot.series.push_back(
      Series{.title = "measured (best ratio per worker count)", .x = workers, .y = rates});
  plot.series.push_back(
      Series{.title = "ideal: 0-worker rate x preprocessing ranks, capped by the GPU step",
             .x = workers,
             .y = linear,
             .style = "lines dashtype 2"});
  add_ceiling(plot, bound, "SIMULATED GPU step bound, samples/s");
  report.set_plot(std::move(plot));
  report.write();
  return 0;
}

}  // namespace conflux::bench
