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

#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/ckpt/checkpoint_store.hpp"
#include "conflux/comm/agreement.hpp"
#include "conflux/train/checkpointer.hpp"
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

// The checkpoint write path alone (HDF5 write with the CRC beside it, fsync, rename, directory
// fsync) with nothing else running, interleaved with the dd-style baseline so that both see the
// same disk: appends MiB/s of each to the two vectors.
void idle_write_rates(const std::filesystem::path& dir, const ckpt::TrainingState& state,
                      std::vector<double>& persist_mib_s, std::vector<double>& sequential_mib_s) {
  const auto file = dir / "idle-persist.h5";
  for (int i = 0; i < 5; ++i) {
    const ckpt::WriteStats w = ckpt::write_checkpoint(file, state);
    persist_mib_s.push_back(static_cast<double>(w.bytes) / (1 << 20) / w.seconds);
    sequential_mib_s.push_back(sequential_write_mib_s(dir / "sequential.tmp", w.bytes));
    std::filesystem::remove(file);
  }
}

Config load(const Options& o, const comm::Communicator& world, bool checkpoints) {
  return load_trainers_only({o.config, o.overrides, o.dir, world.size()},
                            {fmt::format("checkpoint.every_steps={}", checkpoints ? o.every : 0),
                             "checkpoint.final=false"});
}

}  // namespace

int run_checkpoint(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options o;
  CommonOptions common;
  po::options_description desc("conflux-bench checkpoint options (mpirun -np T: T trainers)");
  desc.add_options()("help,h", "show this help")("config", po::value(&o.config)->required(),
                                                 "training config")(
      "set", po::value(&o.overrides)->composing(), "config override KEY=VALUE (repeatable)")(
      "every", po::value(&o.every)->default_value(o.every), "checkpoint every N steps")(
      "rounds", po::value(&o.rounds)->default_value(o.rounds),
      "alternating rounds with and without checkpoints")(
      "dir", po::value(&o.dir)->default_value(o.dir),
      "run directory (checkpoints go to DIR/checkpoints)");
  const auto vm = parse_scenario_options("checkpoint", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(o.rounds >= 1 && o.every >= 1,
                  "checkpoint: --rounds and --every must be at least 1, got {} and {}", o.rounds,
                  o.every);

  std::optional<Config> plain, checkpointed;
  data::SourceSplits data;
  comm::run_agreed(world, [&] {
    plain.emplace(load(o, world, false));
    checkpointed.emplace(load(o, world, true));
    data = train::open_training_data(*plain);
  });
  const comm::Communicator trainers = world.split(0, world.rank());
  std::vector<double> base_s, ckpt_s, stall_ms, persist_mib_s, idle_persist_mib_s, sequential_mib_s;
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
          const ckpt::CheckpointStore store(std::filesystem::path(o.dir) / "checkpoints", 1);
          const auto found = store.newest_valid([](const auto&, const auto&) {});
          CONFLUX_CHECK(found.has_value(), "no checkpoint in {}", store.dir().string());
          idle_write_rates(o.dir, found->state, idle_persist_mib_s, sequential_mib_s);
        }
      }
    }
  }
  if (world.rank() != 0) return 0;
  const double base = median(base_s), with = median(ckpt_s);
  const double overhead_pct = 100 * (with / base - 1);
  const double stall = median(stall_ms), persist = median(persist_mib_s);
  const double idle_persist = median(idle_persist_mib_s), sequential = median(sequential_mib_s);
  Report report("checkpoint", common);
  report.add_parameters(*vm);
  report.set_parameter("trainers", world.size());
  Table& table =
      report.add_table(Table("figures", "results", {"figure", {"value", 3}, "unit", "note"}));
  table.add_row({"steps per run", steps, "", ""});
  table.add_row({"no checkpoints", base, "s", fmt::format("median of {}", base_s.size())});
  table.add_row({fmt::format("checkpoint every {}", o.every), with, "s",
                 fmt::format("median of {}", ckpt_s.size())});
  table.add_row({"overhead", overhead_pct, "%", ""});
  table.add_row({"checkpoints per run", taken, "", ""});
  table.add_row({"stall per checkpoint", stall, "ms", "mean"});
  table.add_row({"stall per checkpoint, max", max_stall_ms, "ms", "max"});
  table.add_row({"checkpoint file", file_mib, "MiB", ""});
  table.add_row({"persist during training", persist, "MiB/s",
                 "median; background thread, sharing the cores with the trainer ranks"});
  table.add_row(
      {"persist, idle", idle_persist, "MiB/s",
       fmt::format("median of {}; the same write path: HDF5 file written directly, CRC beside it, "
                   "fsync, rename, directory fsync",
                   idle_persist_mib_s.size())});
  table.add_row({"dd-style write + fsync", sequential, "MiB/s",
                 "median; 1 MiB writes, same size, same directory, interleaved with the idle "
                 "persists"});
  table.add_row(
      {"persist idle / dd-style", sequential > 0 ? 100 * idle_persist / sequential : 0.0, "%", ""});
  table.print();
  for (const auto& [name, value] : {std::pair<const char*, double>{"overhead_pct", overhead_pct},
                                    {"stall_ms", stall},
                                    {"max_stall_ms", max_stall_ms},
                                    {"file_mib", file_mib},
                                    {"persist_mib_s", persist},
                                    {"idle_persist_mib_s", idle_persist},
                                    {"sequential_mib_s", sequential}}) {
    report.set_summary(name, value);
  }
  fmt::print(
      "RESULT overhead_pct={:.3f} stall_ms={:.3f} file_mib={:.3f} persist_mib_s={:.1f} "
      "idle_persist_mib_s={:.1f}\n",
      overhead_pct, stall, file_mib, persist, idle_persist);
  report.write();
  return 0;
}

}  // namespace conflux::bench
