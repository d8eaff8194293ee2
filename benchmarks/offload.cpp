// conflux-bench offload: the automatic offload ratio against fixed ratios, with a SIMULATED
// GPU STEP (a sleep) as the trainer's compute. Three parts, all in one run:
//  - input-bound (heavy CIFAR-10 augmentation, or with --images an image folder read and
//    decoded per sample; 1 trainer + 1..N workers): a sweep of fixed
//    ratios, the ideal bound min(compute ceiling, local + worker preprocessing capacity), and
//    "auto" (the controller conflux train uses) in steady state;
//  - compute-bound (a long simulated step): auto against no offloading;
//  - drift: with auto running, one worker becomes 2x slower mid-run; throughput per second
//    against the new ideal, and the timeline of steps, ratio and decisions.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "conflux/core/error.hpp"
#include "conflux/offload/ratio_controller.hpp"
#include "conflux/offload/window_meter.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "pipeline_harness.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options : PipelineSettings {
  Options() {
    warmup = 20;
    resolution = 64;  // upscaled as in ImageNet-style training: clearly input-bound
  }
  double seconds = 2;  // measured time of every input-bound run
  int rounds = 3;
  double compute_bound_gpu_step_ms = 60;
  std::string ratios = "0,0.2,0.35,0.5,0.6,0.7,0.8,0.9,1";
  int auto_warmup = 2000;  // steps before auto's measurement: start-up profile + search
  double drift_seconds = 24;
  double slow_factor = 2;
  double interval_s = 0.5;
  std::string timeline = "bench-results/offload-drift-timeline.json";
  std::string parts = "input,compute,drift";
};

// The controller conflux train runs, driven from the harness's per-step hook.
class AutoOffload {
 public:
  AutoOffload(double interval_s, telemetry::Timeline* timeline)
      : meter_(interval_s, {5, 25}),
        controller_({.initial_steps = 5, .profile_steps = 20}),
        timeline_(timeline),
        start_(SteadyClock::now()) {}

  void on_step(data::BatchLoader& loader, const StepTiming& t) {
    const auto now = SteadyClock::now();
    if (timeline_ != nullptr) {
      const auto end = now;
      const auto wait_end = end - std::chrono::duration_cast<SteadyClock::duration>(
                                      std::chrono::duration<double>(t.compute_s));
      const auto begin = wait_end - std::chrono::duration_cast<SteadyClock::duration>(
                                        std::chrono::duration<double>(t.wait_s));
      timeline_->span("data wait", "data", begin, wait_end);
      timeline_->span("SIMULATED GPU step", "train", wait_end, end);
    }
    if (!meter_.record({.data_wait = t.wait_s, .compute = t.compute_s}, now)) return;
    const offload::WindowReport w =
        meter_.close(loader.pipeline_counters(), loader.offload_ratio(), now);
    if (timeline_ != nullptr) {
      timeline_->counter("steps per s", w.seconds > 0 ? w.steps / w.seconds : 0);
    }
    if (const auto d = controller_.on_window(w.input)) {
      loader.set_offload_ratio(d->ratio);
      if (timeline_ != nullptr) timeline_->counter("offload ratio", d->ratio);
      if (d->probe) return;  // a trial of the search
      decisions_.push_back({seconds_since(start_), d->previous, d->ratio, d->reason});
      if (timeline_ != nullptr) {
        timeline_->instant(
            "offload decision", "profile",
            fmt::format("{{\"from\": {:.3f}, \"to\": {:.3f}}}", d->previous, d->ratio));
      }
    }
  }

  struct Logged {
    double t_s, from, to;
    std::string reason;
  };
  const std::vector<Logged>& decisions() const { return decisions_; }

 private:
  offload::WindowMeter meter_;
  offload::RatioController controller_;
  telemetry::Timeline* timeline_;
  SteadyClock::time_point start_;
  std::vector<Logged> decisions_;
};

PipelineRunOptions base_options(const comm::Communicator& service, int workers,
                                const data::SampleSource& dataset, const data::SampleTransform& t,
                                const Options& opt) {
  PipelineRunOptions o = opt.run_options(service, workers, dataset, t);
  o.duration_s = opt.seconds;
  return o;
}

// How often the drift run reads worker 0's answer count (every this many steps).
constexpr std::size_t kCounterEvery = 8;

// Samples/s of the steps whose end lies in [from, to) seconds.
double rate_between(const std::vector<StepTiming>& steps, double from, double to) {
  std::size_t samples = 0;
  double first = -1, last = 0;
  for (const StepTiming& s : steps) {
    if (s.end_s < from || s.end_s >= to) continue;
    if (first < 0) first = s.end_s;
    last = s.end_s;
    samples += s.samples;
  }
  return last > first && first >= 0 ? static_cast<double>(samples) / (last - first) : 0;
}

}  // namespace

int run_offload(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc(
      "conflux-bench offload options (mpirun -np N+1: 1 trainer, 1..N workers)");
  desc.add_options()("help,h", "show this help")(
      "seconds", po::value(&opt.seconds)->default_value(opt.seconds),
      "measured seconds of every input-bound run")(
      "rounds", po::value(&opt.rounds)->default_value(opt.rounds),
      "interleaved rounds of the sweep and auto; medians are compared")(
      "compute-bound-gpu-step-ms",
      po::value(&opt.compute_bound_gpu_step_ms)->default_value(opt.compute_bound_gpu_step_ms),
      "SIMULATED GPU step of the compute-bound part")(
      "ratios", po::value(&opt.ratios)->default_value(opt.ratios), "fixed ratios swept")(
      "auto-warmup", po::value(&opt.auto_warmup)->default_value(opt.auto_warmup),
      "steps before auto's measurement (start-up profile and convergence)")(
      "drift-seconds", po::value(&opt.drift_seconds)->default_value(opt.drift_seconds),
      "length of the drift run (the slow-down starts in its middle)")(
      "slow-factor", po::value(&opt.slow_factor)->default_value(opt.slow_factor),
      "how much slower worker 0 gets in the drift run")(
      "interval", po::value(&opt.interval_s)->default_value(opt.interval_s),
      "profiling window / controller period in seconds (profile.interval_s)")(
      "timeline", po::value(&opt.timeline)->default_value(opt.timeline),
      "Chrome-trace file of the drift run")(
      "parts", po::value(&opt.parts)->default_value(opt.parts),
      "parts to run after the input-bound one, which always runs: compute, drift (e.g. "
      "--parts input for the input-bound part alone)");
  opt.add_pipeline_options(desc);
  opt.add_image_options(desc);
  const auto vm = parse_scenario_options("offload", args, desc, common, world);
  if (!vm) return 0;
  if (world.rank() == 0) check_output_file(opt.timeline, "--timeline");  // root writes it
  CONFLUX_REQUIRE(world.size() >= 2, "offload: needs at least 2 ranks (1 trainer + workers)");
  CONFLUX_REQUIRE(opt.batch >= 1 && opt.rounds >= 1 && opt.auto_warmup >= 0 && opt.resolution >= 1,
                  "offload: --batch, --rounds and --resolution must be at least 1, "
                  "--auto-warmup at least 0");
  CONFLUX_REQUIRE(opt.seconds > 0 && opt.gpu_step_ms > 0 && opt.compute_bound_gpu_step_ms > 0 &&
                      opt.drift_seconds > 0 && opt.interval_s > 0,
                  "offload: --seconds, --gpu-step-ms, --compute-bound-gpu-step-ms, "
                  "--drift-seconds and --interval must be positive");
  CONFLUX_REQUIRE(opt.slow_factor >= 1, "offload: --slow-factor {} is below 1", opt.slow_factor);
  const std::vector<double> ratios = parse_ratio_list(opt.ratios, "--ratios");
  const comm::Communicator service = world.split(0, world.rank());
  const int max_workers = world.size() - 1;
  const bool do_compute = opt.parts.find("compute") != std::string::npos;
  const bool do_drift = opt.parts.find("drift") != std::string::npos;
  const PipelineData input = pipeline_data(opt);
  const data::SampleSource& dataset = *input.source;
  const data::SampleTransform& heavy = *input.transform;
  const bool root = world.rank() == 0;
  if (root) {
    fmt::print(
        "offload: auto vs fixed ratios, 1 trainer + 1..{} worker(s), {}, batch {}\ntrainer "
        "compute = SIMULATED GPU STEP (a sleep, not real compute): {} ms input-bound, {} ms "
        "compute-bound\n\n",
        max_workers, input.description, opt.batch, opt.gpu_step_ms, opt.compute_bound_gpu_step_ms);
  }
  Report report("offload", common);
  report.add_parameters(*vm);
  Table& summary = report.add_table(
      Table("input_bound",
            "input-bound: auto against the best fixed ratio and the ideal bound (samples/s)",
            {"workers",
             {"local only", 0},
             {"workers only", 0},
             {"pipeline cap", 0},
             {"compute cap", 0},
             {"ideal", 0},
             {"best fixed", 0},
             {"best ratio", 2},
             {"auto", 0},
             {"auto ratio", 2},
             {"auto/best %", 1},
             {"auto/ideal %", 1}}));
  Table sweep("sweep", "fixed-ratio sweep (samples/s)",
              {"workers", {"ratio", 2}, {"samples/s", 0}});
  std::vector<Series> plot_series;

  for (int workers = 1; workers <= max_workers; ++workers) {
    // Preprocessing capacity: the pipeline with no compute step, at a few ratios. The best of
    // them is what the trainer's threads and the workers deliver together on these cores
    // (local-only + workers-only would count the shared cores twice).
    auto o = base_options(service, workers, dataset, heavy, opt);
    o.gpu_step_ms = 0;
    double local_cap = 0, workers_cap = 0, pipeline_cap = 0;
    for (const double r : {0.0, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0}) {
      o.offload_ratio = r;
      const double rate = run_pipeline(o).samples_per_s;
      if (r == 0) local_cap = rate;
      if (r == 1) workers_cap = rate;
      pipeline_cap = std::max(pipeline_cap, rate);
    }
    Series series{.title = fmt::format("{} worker(s), fixed", workers)};
    // Rounds interleave every fixed ratio and auto, so the machine's drifting load hits them
    // alike; medians are compared.
    std::vector<std::vector<double>> fixed(ratios.size());
    std::vector<double> auto_rates, auto_ratios;
    std::vector<double> step_compute_s;  // the simulated step as measured, waits excluded
    std::vector<AutoOffload::Logged> decisions;
    for (int round = 0; round < opt.rounds; ++round) {
      for (std::size_t i = 0; i < ratios.size(); ++i) {
        auto f = base_options(service, workers, dataset, heavy, opt);
        f.offload_ratio = ratios[i];
        const PipelineRun run = run_pipeline(f);
        fixed[i].push_back(run.samples_per_s);
        for (const StepTiming& s : run.steps) step_compute_s.push_back(s.compute_s);
      }
      auto a = base_options(service, workers, dataset, heavy, opt);
      a.warmup_steps = opt.auto_warmup;
      a.duration_s = 3 * opt.seconds;  // long enough to include the search's probes
      a.offload_ratio = 0;
      AutoOffload tuner(opt.interval_s, nullptr);
      double auto_ratio = 0;
      a.on_step = [&](std::size_t, data::BatchLoader& loader, const StepTiming& t) {
        tuner.on_step(loader, t);
        auto_ratio = loader.offload_ratio();
      };
      auto_rates.push_back(run_pipeline(a).samples_per_s);
      auto_ratios.push_back(auto_ratio);
      if (round == 0) decisions = tuner.decisions();
    }
    if (!root) continue;
    // The compute ceiling: the same steps with the data waits removed (a sleep of 2 ms takes a
    // little longer than 2 ms, and the loop adds its own overhead).
    double compute_sum = 0;
    for (const double c : step_compute_s) compute_sum += c;
    const double compute_cap =
        step_compute_s.empty() ? 0 : opt.batch * step_compute_s.size() / compute_sum;
    const double ideal = std::min(compute_cap, pipeline_cap);
    double best = 0, best_ratio = 0;
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      const double rate = median(fixed[i]);
      sweep.add_row({workers, ratios[i], rate});
      series.x.push_back(ratios[i]);
      series.y.push_back(rate);
      if (rate > best) best = rate, best_ratio = ratios[i];
    }
    const double auto_rate = median(auto_rates);
    summary.add_row({workers, local_cap, workers_cap, pipeline_cap, compute_cap, ideal, best,
                     best_ratio, auto_rate, median(auto_ratios), 100 * auto_rate / best,
                     100 * auto_rate / ideal});
    report.set_summary(fmt::format("auto_over_best_pct_{}w", workers), 100 * auto_rate / best);
    for (const auto& d : decisions) {
      fmt::print("  [{} worker(s), round 0] t={:.2f} s ratio {:.2f} -> {:.2f}: {}\n", workers,
                 d.t_s, d.from, d.to, d.reason);
    }
    plot_series.push_back(std::move(series));
  }

  // Compute-bound: auto against ratio 0 with a long simulated step, alternating.
  Table& compute = report.add_table(
      Table("compute_bound", "compute-bound: auto against no offloading (samples/s)",
            {"round", {"ratio 0", 1}, {"auto", 1}, {"auto ratio", 2}, {"cost %", 2}}));
  std::vector<double> costs;
  for (int round = 0; do_compute && round < 3; ++round) {
    auto o = base_options(service, max_workers, dataset, heavy, opt);
    o.gpu_step_ms = opt.compute_bound_gpu_step_ms;
    o.warmup_steps = 30;
    o.steps = 40;
    const double plain = run_pipeline(o).samples_per_s;
    AutoOffload tuner(opt.interval_s, nullptr);
    double auto_ratio = 0;
    o.on_step = [&](std::size_t, data::BatchLoader& loader, const StepTiming& t) {
      tuner.on_step(loader, t);
      auto_ratio = loader.offload_ratio();
    };
    const double with_auto = run_pipeline(o).samples_per_s;
    if (!root) continue;
    const double cost = 100 * (1 - with_auto / plain);
    costs.push_back(cost);
    compute.add_row({round, plain, with_auto, auto_ratio, cost});
  }

  const auto print_head = [&] {
    summary.print();
    fmt::print("\n");
    sweep.print();
    fmt::print("\n");
    if (!do_compute) return;
    compute.print();
    fmt::print("  median cost of auto against no offloading: {:.2f} %\n\n", median(costs));
    report.set_summary("compute_bound_cost_pct", median(costs));
  };
  const auto write_report = [&] {
    report.set_plot(Plot{.title = "offload: fixed-ratio sweep (auto in the summary table)",
                         .xlabel = "offload ratio",
                         .ylabel = "samples/s",
                         .series = plot_series});
    report.write();
  };
  if (!do_drift) {
    if (!root) return 0;
    print_head();
    write_report();
    return 0;
  }
  // Drift: worker 0 becomes slow_factor times slower half-way through an auto run.
  telemetry::Timeline timeline(telemetry::TimelineOptions{
      .enabled = true, .process_name = fmt::format("rank {}", world.rank())});
  timeline.name_thread(root ? "trainer main" : "worker");
  auto d = base_options(service, max_workers, dataset, heavy, opt);
  d.warmup_steps = 0;
  d.duration_s = opt.drift_seconds;
  d.fault_worker = 0;
  d.fault.mode = data::WorkerFault::Mode::kSlow;
  d.fault.factor = opt.slow_factor;
  AutoOffload tuner(opt.interval_s, root ? &timeline : nullptr);
  // The slow-down starts after a number of answers that worker 0 reaches about half-way: its
  // share of the measured rate over half the run (from a short auto run's figures).
  d.fault.after = 0;
  double onset_s = -1;
  std::uint64_t answers_at_half = 0;
  {
    auto probe = base_options(service, max_workers, dataset, heavy, opt);
    probe.warmup_steps = 0;
    probe.duration_s = opt.drift_seconds / 2;
    AutoOffload probe_tuner(opt.interval_s, nullptr);
    probe.on_step = [&](std::size_t step, data::BatchLoader& loader, const StepTiming& t) {
      probe_tuner.on_step(loader, t);
      if (step % kCounterEvery != 0) return;  // the counters copy a vector: not every step
      const auto c = loader.pipeline_counters();
      if (!c.workers.empty()) answers_at_half = c.workers[0].answers;
    };
    run_pipeline(probe);
  }
  std::uint64_t after = 0;
  if (root) after = answers_at_half;
  after = static_cast<std::uint64_t>(std::stoull(world.broadcast(std::to_string(after), 0)));
  d.fault.after = after;
  const auto run_start = SteadyClock::now();
  d.on_step = [&](std::size_t step, data::BatchLoader& loader, const StepTiming& t) {
    tuner.on_step(loader, t);
    if (onset_s < 0 && step % kCounterEvery == 0) {
      const auto c = loader.pipeline_counters();
      if (!c.workers.empty() && c.workers[0].answers >= after) {
        onset_s = seconds_since(run_start);
        timeline.instant("worker 0 slowed", "fault",
                         fmt::format("{{\"factor\": {}}}", opt.slow_factor));
      }
    }
  };
  const PipelineRun drift = run_pipeline(d);
  timeline.write_merged(world, opt.timeline);
  // The new ideal, measured: the preprocessing capacity with worker 0 slowed from the start
  // (the pipeline alone, best of the same ratios as before).
  double slowed_cap = 0;
  for (const double r : {0.0, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0}) {
    auto c = base_options(service, max_workers, dataset, heavy, opt);
    c.gpu_step_ms = 0;
    c.offload_ratio = r;
    c.fault_worker = 0;
    c.fault.mode = data::WorkerFault::Mode::kSlow;
    c.fault.factor = opt.slow_factor;
    c.fault.after = 0;
    slowed_cap = std::max(slowed_cap, run_pipeline(c).samples_per_s);
  }
  if (!root) return 0;
  print_head();

  const auto& rows = summary.rows();
  const double compute_cap = rows.back()[4].number();
  const double new_ideal = std::min(compute_cap, slowed_cap);
  Table& bins = report.add_table(
      Table("drift",
            fmt::format("drift: worker 0 {}x slower from t = {:.1f} s (samples/s per second; "
                        "new ideal {:.0f} = min(compute cap, capacity with worker 0 slowed))",
                        opt.slow_factor, onset_s, new_ideal),
            {{"t s", 0}, {"samples/s", 0}, {"of new ideal %", 0}}));
  // The drift run's step times count from its own start; the harness measures from step 0.
  double recovered_s = -1;
  std::vector<double> after_shares;  // the whole seconds after the slow-down
  for (double t = 0; t + 1 <= drift.seconds; t += 1) {
    const double rate = rate_between(drift.steps, t, t + 1);
    bins.add_row({t, rate, 100 * rate / new_ideal});
    if (onset_s >= 0 && t >= onset_s && recovered_s < 0 && rate >= 0.9 * new_ideal) {
      recovered_s = t + 1 - onset_s;
    }
    if (onset_s >= 0 && t >= onset_s) after_shares.push_back(rate / new_ideal);
  }
  bins.print();
  for (const auto& dd : tuner.decisions()) {
    fmt::print("  drift decision t={:.2f} s ratio {:.2f} -> {:.2f}: {}\n", dd.t_s, dd.from, dd.to,
               dd.reason);
  }
  fmt::print(
      "  after the slow-down at t = {:.1f} s, throughput is >= 90 % of the new ideal {} "
      "(timeline: {})\n",
      onset_s,
      recovered_s >= 0 ? fmt::format("within {:.1f} s", recovered_s) : std::string("never"),
      opt.timeline);
  if (!after_shares.empty()) {
    const auto at_90 =
        std::count_if(after_shares.begin(), after_shares.end(), [](double x) { return x >= 0.9; });
    fmt::print("  after it: median {:.0f} % of the new ideal; {} of {} seconds at >= 90 %\n",
               100 * median(after_shares), at_90, after_shares.size());
    report.set_summary("drift_median_pct_of_new_ideal", 100 * median(after_shares));
  }
  report.set_summary("drift_recovery_s", recovered_s);
  write_report();
  return 0;
}

}  // namespace conflux::bench
