// conflux-bench profiler: what the always-on profiling costs a training run. Trains the same
// config with the profiler (the pipeline monitor's windows, profile-trainer<t>.jsonl, the
// timeline) and without it, alternating in one process, and reports the slowdown; then times
// the profiler's per-step work alone (recording a step, closing windows) against the measured
// step time.

#include <fmt/format.h>

#include <algorithm>

#include "conflux/comm/agreement.hpp"
#include "conflux/offload/window_meter.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/pipeline_monitor.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"
#include "trainer_configs.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options {
  std::string config = "configs/mnist_mlp.toml";
  std::vector<std::string> overrides;
  std::string dir = "bench-results/profiler-run";
  int rounds = 3;
};

Config load(const Options& o, const comm::Communicator& world, bool profiled) {
  return load_trainers_only(
      {o.config, o.overrides, o.dir, world.size()},
      {fmt::format("profile.enabled={}", profiled), fmt::format("profile.timeline={}", profiled)});
}

// Nanoseconds per step of the profiler's own work, as the trainer does it: six clock reads,
// five timeline spans (step, data wait, compute, gradient sync, optimizer), recording the step
// and, once per window of `steps_per_window` steps, closing it against pipeline counters with
// two workers.
double profiler_ns_per_step(std::size_t steps_per_window) {
  offload::WindowMeter meter(1e9);  // windows closed by hand below
  telemetry::Timeline timeline(telemetry::TimelineOptions{.enabled = true, .max_events = 1u << 22});
  offload::PipelineCounters counters;
  counters.workers.resize(2);
  const offload::StepTimes times{.data_wait = 1e-4, .compute = 3e-3, .sync = 1e-4};
  constexpr std::size_t kSteps = 500'000;
  const auto start = SteadyClock::now();
  double sink = 0;
  for (std::size_t i = 1; i <= kSteps; ++i) {
    SteadyClock::time_point t[6];
    for (auto& point : t) point = SteadyClock::now();
    const std::string args =
        fmt::format("{{\"epoch\": {}, \"step\": {}, \"global_step\": {}}}", 0, i, i);
    timeline.span("step", "train", t[0], t[5], args);
    timeline.span("data wait", "data", t[0], t[1]);
    timeline.span("compute", "train", t[1], t[2]);
    timeline.span("gradient sync", "comm", t[2], t[3]);
    timeline.span("optimizer", "train", t[3], t[4]);
    meter.record(times, t[5]);
    if (i % steps_per_window == 0) {
      ++counters.delivered;
      sink += meter.close(counters, 0, start).total.compute;
    }
  }
  const double seconds = seconds_since(start);
  return sink >= 0 ? 1e9 * seconds / kSteps : 0;
}

// Run times with and without the monitor, alternating, over `rounds` rounds.
struct Rounds {
  std::vector<double> base_s, with_s;
  std::size_t steps = 0;  // per run
};

Rounds measure_rounds(const Options& o, const Config& plain, const Config& profiled,
                      const data::SourceSplits& data, const comm::Communicator& world) {
  const comm::Communicator trainers = world.split(0, world.rank());
  Rounds r;
  for (int round = 0; round < o.rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      const bool with = (k == 0) == (round % 2 == 0);
      const Config& config = with ? profiled : plain;
      telemetry::Timeline timeline(telemetry::TimelineOptions{.enabled = with});
      train::Trainer trainer(
          train::TrainerSetup{config, trainers, data, {}, nullptr, with ? &timeline : nullptr});
      std::optional<train::PipelineMonitor> monitor;
      std::vector<train::TrainingCallback*> callbacks;
      if (with) {
        monitor.emplace(train::PipelineMonitorOptions{config, trainers.rank(), nullptr, &timeline});
        callbacks.push_back(&*monitor);
      }
      trainers.barrier();
      const train::TrainSummary summary = trainer.run(callbacks);
      if (with) timeline.write_merged(trainers, std::filesystem::path(o.dir) / "timeline.json");
      r.steps = summary.global_step;
      (with ? r.with_s : r.base_s).push_back(summary.total_seconds);
    }
  }
  return r;
}

void report_overhead(const Options& o, const Rounds& r, const po::variables_map& vm,
                     const CommonOptions& common, int ranks) {
  const double base = median(r.base_s), with = median(r.with_s);
  const double step_ms = 1e3 * base / static_cast<double>(r.steps);
  const double ns_per_step = profiler_ns_per_step(100);
  Report report("profiler", common);
  report.add_parameters(vm);
  Table& table = report.add_table(
      Table("overhead",
            fmt::format("profiler overhead: {} on {} trainer(s), {} steps per run, median "
                        "of {} alternating rounds",
                        o.config, ranks, r.steps, o.rounds),
            {"measure", {"value", 4}, "unit"}));
  table.add_row({"run without profiler", base, "s"});
  table.add_row({"run with profiler + timeline", with, "s"});
  table.add_row({"whole-run overhead", 100 * (with / base - 1), "%"});
  table.add_row({"step time", step_ms, "ms"});
  table.add_row({"profiler work per step (clocks, 5 timeline spans, record, window close / 100)",
                 ns_per_step, "ns"});
  table.add_row({"profiler work / step time", 100 * ns_per_step * 1e-6 / step_ms, "%"});
  table.print();
  report.set_summary("overhead_pct", 100 * (with / base - 1));
  report.set_summary("per_step_pct", 100 * ns_per_step * 1e-6 / step_ms);
  report.write();
}

}  // namespace

int run_profiler_overhead(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options o;
  CommonOptions common;
  po::options_description desc("conflux-bench profiler options (mpirun -np T: T trainers)");
  desc.add_options()("help,h", "show this help")(
      "config", po::value(&o.config)->default_value(o.config), "training config")(
      "set", po::value(&o.overrides)->composing(), "config override KEY=VALUE (repeatable)")(
      "rounds", po::value(&o.rounds)->default_value(o.rounds),
      "alternating rounds with and without the profiler")(
      "dir", po::value(&o.dir)->default_value(o.dir), "run directory");
  const auto vm = parse_scenario_options("profiler", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(o.rounds >= 1, "profiler: --rounds must be at least 1, got {}", o.rounds);
  std::optional<Config> plain, profiled;
  data::SourceSplits data;
  comm::run_agreed(world, [&] {
    plain.emplace(load(o, world, false));
    profiled.emplace(load(o, world, true));
    data = train::open_training_data(*plain);
    std::filesystem::create_directories(o.dir);
  });
  const Rounds rounds = measure_rounds(o, *plain, *profiled, data, world);
  if (world.rank() != 0) return 0;
  report_overhead(o, rounds, *vm, common, world.size());
  return 0;
}

}  // namespace conflux::bench
