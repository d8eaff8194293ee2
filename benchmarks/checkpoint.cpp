// conflux-bench checkpoint: what checkpointing costs a training run. Trains the same config
// with and without checkpoints every N steps, alternating in one process (all ranks are
// trainers, no workers, no evaluation), and reports the slowdown, the stall per checkpoint and
// the background persist throughput. benchmarks/checkpoint.sh compares that throughput with
// `dd ... conv=fsync` into the same directory.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "conflux/comm/agreement.hpp"
#include "conflux/train/checkpointer.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options {
  std::string config;
  std::vector<std::string> overrides;
  std::string dir = "bench-results/checkpoint-run";
  int every = 100;
  int rounds = 3;
};

// What `dd if=/dev/zero of=FILE bs=1M count=N conv=fsync` does: sequential 1 MiB writes, one
// fsync, close. Returns MiB/s; the file is removed.
double sequential_write_mib_s(const std::filesystem::path& file, std::size_t bytes) {
  const std::vector<char> block(1 << 20, 0);
  const auto start = std::chrono::steady_clock::now();
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CONFLUX_CHECK(fd >= 0, "cannot create {}", file.string());
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(block.size(), bytes - done);
    const ssize_t w = ::write(fd, block.data(), n);
    CONFLUX_CHECK(w > 0, "cannot write {}", file.string());
    done += static_cast<std::size_t>(w);
  }
  CONFLUX_CHECK(::fsync(fd) == 0 && ::close(fd) == 0, "cannot sync {}", file.string());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove(file);
  return static_cast<double>(bytes) / (1 << 20) / seconds;
}

Config load(const Options& o, const comm::Communicator& world, bool checkpoints) {
  ConfigSources sources{o.overrides, "", "bench"};
  sources.overrides.push_back(fmt::format("cluster.trainers={}", world.size()));
  sources.overrides.push_back("cluster.workers=0");
  sources.overrides.push_back("train.eval=false");
  sources.overrides.push_back("train.log_every=0");
  sources.overrides.push_back(fmt::format("run.dir=\"{}\"", o.dir));
  sources.overrides.push_back(fmt::format("checkpoint.every_steps={}", checkpoints ? o.every : 0));
  sources.overrides.push_back("checkpoint.final=false");
  return load_config_file(o.config, sources);
}

}  // namespace

int run_checkpoint(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options o;
  po::options_description desc("conflux-bench checkpoint options (mpirun -np T: T trainers)");
  desc.add_options()("help,h", "show this help")("config", po::value(&o.config)->required(),
                                                 "training config")(
      "set", po::value(&o.overrides)->composing(), "config override KEY=VALUE (repeatable)")(
      "every", po::value(&o.every), "checkpoint every N steps")(
      "rounds", po::value(&o.rounds), "alternating rounds with and without checkpoints")(
      "dir", po::value(&o.dir), "run directory (checkpoints go to DIR/checkpoints)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    if (world.rank() == 0) std::cout << desc;
    return 0;
  }
  po::notify(vm);

  std::optional<Config> plain, checkpointed;
  data::DatasetSplits data;
  comm::run_agreed(world, [&] {
    plain.emplace(load(o, world, false));
    checkpointed.emplace(load(o, world, true));
    data = train::load_training_data(*plain);
    data.test = data::Dataset{};
  });
  const comm::Communicator trainers = world.split(0, world.rank());
  std::vector<double> base_s, ckpt_s, stall_ms, persist_mib_s, sequential_mib_s;
  double max_stall_ms = 0, file_mib = 0;
  std::size_t steps = 0, taken = 0;
  if (world.rank() == 0) {
    fmt::print(
        "checkpoint every {} steps vs none: {} on {} trainer(s), {} rounds (each "
        "round runs both, alternating which goes first)\n",
        o.every, o.config, world.size(), o.rounds);
  }
  for (int round = 0; round < o.rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      const bool with = (k == 0) == (round % 2 == 0);
      const Config& config = with ? *checkpointed : *plain;
      train::Trainer trainer(train::TrainerSetup{config, trainers, data});
      std::optional<train::Checkpointer> checkpointer;
      std::vector<train::TrainingCallback*> callbacks;
      if (with) {
        checkpointer.emplace(train::CheckpointerOptions{config, trainers});
        callbacks.push_back(&*checkpointer);
      }
      trainers.barrier();
      const train::TrainSummary summary = trainer.run(callbacks);  // waits for the last write
      steps = summary.global_step;
      (with ? ckpt_s : base_s).push_back(summary.total_seconds);
      if (!with) continue;
      const train::CheckpointerStats s = checkpointer->stats();
      taken = s.taken;
      if (s.taken > 0) {
        stall_ms.push_back(1e3 * s.stall_seconds / static_cast<double>(s.taken));
        max_stall_ms = std::max(max_stall_ms, 1e3 * s.max_stall_seconds);
      }
      if (s.persist.written > 0) {
        file_mib = static_cast<double>(s.persist.bytes) / (1 << 20) /
                   static_cast<double>(s.persist.written);
        persist_mib_s.push_back(static_cast<double>(s.persist.bytes) / (1 << 20) /
                                s.persist.write_seconds);
        if (world.rank() == 0) {  // the baseline, in the same directory, between the runs
          const auto bytes = static_cast<std::size_t>(s.persist.bytes / s.persist.written);
          for (int i = 0; i < 3; ++i) {
            sequential_mib_s.push_back(
                sequential_write_mib_s(std::filesystem::path(o.dir) / "sequential.tmp", bytes));
          }
        }
      }
    }
  }
  if (world.rank() != 0) return 0;
  const double base = median(base_s), with = median(ckpt_s);
  const double overhead_pct = 100 * (with / base - 1);
  const double stall = median(stall_ms), persist = median(persist_mib_s);
  const double sequential = median(sequential_mib_s);
  fmt::print("  steps per run            {}\n", steps);
  fmt::print("  no checkpoints           {:.3f} s (median of {})\n", base, base_s.size());
  fmt::print("  checkpoint every {:<6}  {:.3f} s (median of {})\n", o.every, with, ckpt_s.size());
  fmt::print("  overhead                 {:+.2f} %\n", overhead_pct);
  fmt::print("  checkpoints per run      {}\n", taken);
  fmt::print("  stall per checkpoint     {:.2f} ms mean, {:.2f} ms max\n", stall, max_stall_ms);
  fmt::print("  checkpoint file          {:.2f} MiB\n", file_mib);
  fmt::print(
      "  persist throughput       {:.1f} MiB/s (median; write + fsync + rename, background)\n",
      persist);
  fmt::print(
      "  dd-style write + fsync   {:.1f} MiB/s (median; 1 MiB writes, same size, same "
      "directory, between the runs)\n",
      sequential);
  fmt::print("  persist / dd-style       {:.0f} %\n",
             sequential > 0 ? 100 * persist / sequential : 0.0);
  fmt::print("RESULT overhead_pct={:.3f} stall_ms={:.3f} file_mib={:.3f} persist_mib_s={:.1f}\n",
             overhead_pct, stall, file_mib, persist);
  return 0;
}

}  // namespace conflux::bench
