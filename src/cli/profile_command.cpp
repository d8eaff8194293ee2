// `conflux profile`: the sweep that measures a config under Lambda-like limits, on every rank
// of an MPI job (docs/planning.md, "The sweep").

#include <boost/program_options.hpp>

#include <optional>

#include "command.hpp"
#include "conflux/plan/sweep.hpp"
#include "mpi_command.hpp"
#include "plan_options.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

// Options of `conflux profile`.
struct ProfileArgs {
  ConfigOption config;
  std::vector<int> workers, memory_mb, batches;
  std::vector<int> threads;  // --threads; empty: cluster.blas_threads
  int steps = 20, warmup = 5;
  double min_seconds = 1.0;
  std::string output;
};

// The options, the config file and its overrides included; nothing after --help.
std::optional<ProfileArgs> parse_profile_args(const Invocation& inv) {
  ProfileArgs out;
  std::string workers = "1", memory, batches, threads;
  po::options_description options("conflux profile options");
  options.add_options()("help,h", "show this help")(
      "workers", po::value(&workers), "trainer counts to measure, e.g. 1,2 (each ≤ ranks)")(
      "memory", po::value(&memory)->required(), "function sizes in MB, e.g. 512,1024,1769")(
      "batch", po::value(&batches)->required(), "per-worker batch sizes, e.g. 32,64,128")(
      "threads", po::value(&threads),
      "BLAS threads per trainer to profile, e.g. 1,2 (default: cluster.blas_threads); the plan "
      "then chooses among them")("steps", po::value(&out.steps),
                                 "measured steps per point (default 20)")(
      "warmup", po::value(&out.warmup), "steps before measuring (default 5)")(
      "seconds", po::value(&out.min_seconds), "measure each point at least this long (default 1)")(
      "output,o", po::value(&out.output)->required(), "profile file to write (TOML)");
  out.config.add_to(options);
  if (!parse_options(inv, options)) return std::nullopt;
  out.workers = int_list(workers, "workers");
  out.memory_mb = int_list(memory, "memory");
  out.batches = int_list(batches, "batch");
  if (!threads.empty()) out.threads = int_list(threads, "threads");
  return out;
}

int run_profile(const Invocation& inv) {
  const std::optional<ProfileArgs> args = parse_profile_args(inv);
  if (!args) return 0;
  return run_mpi_command(inv, {args->config.path, args->config.overrides}, [&](const MpiJob& job) {
    const plan::Sweep profile = plan::run_sweep(plan::SweepOptions{
        .config = &job.config,
        .world = &job.world,
        .log = &job.log,
        .worker_counts = args->workers,
        .memory_mb = args->memory_mb,
        .batch_sizes = args->batches,
        .thread_counts = args->threads,
        .warmup_steps = args->warmup,
        .steps = args->steps,
        .min_seconds = args->min_seconds,
    });
    if (job.world.rank() == 0) {
      plan::write_sweep(args->output, profile);
      job.log.info("profile of {} points written to {}", profile.points.size(), args->output);
    }
    return 0;
  });
}

}  // namespace

const Command& profile_command() {
  static const Command command{
      .name = "profile",
      .usage =
          "mpirun -np N conflux profile --config FILE --workers 1,2 --memory 512,1024 "
          "--batch 32,64 --output PROFILE.toml",
      .summary = "measure under Lambda-like limits",
      .help =
          "Trains a few steps of the config at every point of the grid (trainer counts, "
          "function sizes in MB, per-worker batches, BLAS threads), each rank held to the "
          "point's CPU share and memory, and writes the step times to PROFILE.toml for "
          "`conflux fit`. docs/planning.md, \"The sweep\".",
      .run = run_profile};
  return command;
}

}  // namespace conflux::cli
