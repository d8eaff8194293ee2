// conflux-bench train: end-to-end training throughput. Runs the real training job (what
// `conflux train` runs: role split, data service, training loop, run directory) for a config,
// cut down to a few epochs of a limited training set, and reports samples/s per epoch from the
// job's own metrics.jsonl plus the total time.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "conflux/comm/agreement.hpp"
#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/log.hpp"
#include "conflux/train/train_job.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options {
  std::string config = "configs/cifar10_heavy_service.toml";
  std::vector<std::string> overrides;
  int epochs = 2;
  std::int64_t train_limit = 3840;
  bool eval = false;
  std::string dir = "bench-results/train-run";
};

// The number after "key": in one line of the flat JSON objects the job writes (metrics.jsonl,
// summary.json); NaN when the key is missing or null.
double json_field(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = line.find(needle);
  if (at == std::string::npos) return std::numeric_limits<double>::quiet_NaN();
  const char* begin = line.c_str() + at + needle.size();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  return end == begin ? std::numeric_limits<double>::quiet_NaN() : value;
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  CONFLUX_CHECK(in.good(), "train: the job wrote no {}", path.string());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

int run_train(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc(
      "conflux-bench train options (mpirun -np N: trainers and workers as the config and "
      "--set cluster.trainers=/cluster.workers= say)");
  desc.add_options()("help,h", "show this help")(
      "config", po::value(&opt.config)->default_value(opt.config), "training config")(
      "set", po::value(&opt.overrides)->composing(),
      "config override KEY=VALUE, e.g. cluster.trainers=2 or data.dir=DIR (repeatable; applied "
      "after the options below, so it wins)")(
      "epochs", po::value(&opt.epochs)->default_value(opt.epochs), "train.epochs")(
      "train-limit", po::value(&opt.train_limit)->default_value(opt.train_limit),
      "data.train_limit: training samples per epoch (0: the whole training set)")(
      "eval", po::bool_switch(&opt.eval), "evaluate on the test set after every epoch")(
      "dir", po::value(&opt.dir)->default_value(opt.dir),
      "run.dir of the job (its metrics.jsonl and summary.json are replaced)");
  const auto vm = parse_scenario_options("train", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(opt.epochs >= 1 && opt.train_limit >= 0,
                  "train: --epochs must be at least 1 and --train-limit not negative");

  ConfigSources sources = environment_sources({}, "bench");  // data as conflux finds it
  sources.overrides = {fmt::format("train.epochs={}", opt.epochs),
                       fmt::format("data.train_limit={}", opt.train_limit),
                       fmt::format("train.eval={}", opt.eval ? "true" : "false"),
                       "train.log_every=0", fmt::format("run.dir=\"{}\"", opt.dir)};
  sources.overrides.insert(sources.overrides.end(), opt.overrides.begin(), opt.overrides.end());
  std::optional<Config> config;
  int workers = 0;
  comm::run_agreed(world, [&] {
    config.emplace(load_config_file(opt.config, sources));
    workers = config->workers_for(world.size());
    // RunRecorder appends to metrics.jsonl: a previous run's epochs must not be read as ours.
    if (world.rank() == 0) {
      std::filesystem::remove(config->run().dir / "metrics.jsonl");
      std::filesystem::remove(config->run().dir / "summary.json");
    }
  });
  const bool root = world.rank() == 0;
  if (root) {
    fmt::print(
        "train: {} on {} rank(s): {} trainer(s) + {} worker(s), {} epoch(s) of {} training "
        "samples, evaluation {}; the real training job (as conflux train)\n\n",
        opt.config, world.size(), config->cluster().trainers, workers, opt.epochs,
        opt.train_limit > 0 ? fmt::format("{}", opt.train_limit) : std::string("all"),
        opt.eval ? "on" : "off");
    std::fflush(stdout);
  }
  const Logger log(world.rank());
  world.barrier();
  const auto start = std::chrono::steady_clock::now();
  const train::JobEnd end = train::run_train_job(*config, world, log, nullptr);
  CONFLUX_CHECK(!end.leave_lost_workers, "train: a worker stopped answering; no figures");
  const ExitCode code = end.code;
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!root) return static_cast<int>(code);

  Report report("train", common);
  report.add_parameters(*vm);
  report.set_parameter("trainers", config->cluster().trainers);
  report.set_parameter("workers", workers);
  report.set_parameter("batch_size", config->train().batch_size);
  report.set_parameter("offload_ratio", config->data().offload_ratio);
  Table& table = report.add_table(
      Table("epochs",
            fmt::format("training throughput per epoch ({} trainer(s) + {} worker(s), batch {}; "
                        "evaluation excluded)",
                        config->cluster().trainers, workers, config->train().batch_size),
            {"epoch",
             "samples",
             {"epoch s", 3},
             {"samples/s", 0},
             "local batches",
             "worker batches",
             "fallback batches",
             {"train loss", 4}}));
  double samples = 0, train_s = 0;
  for (const std::string& line : read_lines(config->run().dir / "metrics.jsonl")) {
    const auto field = [&](const char* key) { return json_field(line, key); };
    const auto count = [&](const char* key) { return static_cast<std::int64_t>(field(key)); };
    table.add_row({count("epoch"), count("samples"), field("epoch_seconds"), field("samples_per_s"),
                   count("local_batches"), count("worker_batches"), count("fallback_batches"),
                   field("train_loss")});
    samples += field("samples");
    train_s += field("epoch_seconds");
  }
  table.print();
  const auto summary = config->run().dir / "summary.json";
  const double total_s = std::filesystem::exists(summary)
                             ? json_field(read_lines(summary).front(), "total_seconds")
                             : std::numeric_limits<double>::quiet_NaN();
  fmt::print(
      "\ntotal: {:.0f} samples in {:.3f} s of training epochs = {:.0f} samples/s; training "
      "loop {:.3f} s (evaluation included); job {:.3f} s (data loading, setup and shutdown "
      "included)\n\n",
      samples, train_s, train_s > 0 ? samples / train_s : 0.0, total_s, wall_s);
  report.set_summary("samples", samples);
  report.set_summary("train_seconds", train_s);
  report.set_summary("samples_per_s", train_s > 0 ? samples / train_s : 0.0);
  report.set_summary("training_loop_seconds", total_s);
  report.set_summary("job_seconds", wall_s);
  std::vector<std::pair<double, std::string>> tics;
  for (const double e : table.numbers("epoch")) tics.emplace_back(e, fmt::format("{}", e));
  report.set_plot(
      Plot{.title = fmt::format("training throughput: {}, {} trainer(s) + {} worker(s)",
                                config->run().name, config->cluster().trainers, workers),
           .xlabel = "epoch",
           .ylabel = "training samples/s",
           .xtics = tics,
           .series = {Series{.title = "samples/s (evaluation excluded)",
                             .x = table.numbers("epoch"),
                             .y = table.numbers("samples/s")}}});
  report.write();
  return static_cast<int>(code);
}

}  // namespace conflux::bench
