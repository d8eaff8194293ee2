// conflux-bench grad-sync: what the gradient sum of data-parallel training costs per
// iteration. Times conflux's comm::MpiAllreduceSync (the trainers' gradient sum) on every rank
// for the parameter counts of the configured models and a sweep of message sizes, and reports
// the median time with nccl-tests' algorithm and bus bandwidth. Then times comm::KReduceSync
// for the models' parameter counts for every aggregator count K = 1..N, synchronous and with
// stale non-aggregators, against the allreduce.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/gradient_sync.hpp"
#include "conflux/comm/kreduce_sync.hpp"
#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/model/model.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options {
  std::string configs = "configs/mnist_mlp.toml,configs/cifar10_cnn.toml";
  std::vector<std::string> overrides;
  std::size_t min_bytes = 4096;
  std::size_t max_bytes = 16 << 20;
  int factor = 4;
  int iters = 20;
  int warmup = 3;
  double timeout_s = 60;
  bool kreduce = true;
};

// One buffer to time: a model's gradient or a size of the sweep.
struct Buffer {
  std::string what;
  std::size_t floats = 0;
};

// The parameter count of the model `path` describes, built as a trainer builds it (the input
// shape comes from the dataset and the transform, so the data must be readable).
std::size_t parameter_count(const std::string& path, const std::vector<std::string>& overrides) {
  const Config config = load_config_file(path, environment_sources(overrides, "bench"));
  const data::SourceSplits data = train::open_training_data(config);
  const data::SampleTransform transform = train::make_transform(config, *data.train);
  const data::ImageShape in = transform.output_shape();
  const model::Model model(config.layers(), {in.channels, in.height, in.width},
                           data.train->info().num_classes, config.run().seed);
  return model.params().size();
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Seconds of each timed iteration: the slowest rank's (a sum is done only when it is done
// everywhere), and the slowest of the ranks in `group` and of those not in it (K-Reduce's
// aggregators and non-aggregators; 0 when a side has no rank).
struct SyncTimes {
  std::vector<double> slowest, group, others;
};

SyncTimes time_exchange(const comm::Communicator& ranks, comm::GradientSync& sync,
                        std::size_t floats, const Options& opt, bool in_group = true) {
  std::vector<float> gradients(floats);
  std::vector<double> seconds;
  for (int k = 0; k < opt.warmup + opt.iters; ++k) {
    // Fresh values every time: repeated sums of the same buffer would overflow to infinity.
    std::fill(gradients.begin(), gradients.end(), 1.0f);
    ranks.barrier();
    const auto start = std::chrono::steady_clock::now();
    const comm::Merged merged = sync.exchange(gradients);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (k >= opt.warmup) seconds.push_back(elapsed.count());
    // A stale non-aggregator's sum (kPrevious) is of the same values.
    CONFLUX_CHECK(
        merged == comm::Merged::kNone || gradients.front() == static_cast<float>(ranks.size()),
        "grad-sync: {} summed to {}, not {}", sync.name(), gradients.front(), ranks.size());
  }
  sync.drain(gradients);  // what a stale non-aggregator still owes: outside the timing
  const std::size_t n = seconds.size();
  std::vector<double> all(3 * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    all[i] = seconds[i];
    all[(in_group ? n : 2 * n) + i] = seconds[i];
  }
  CONFLUX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()),
                                  MPI_DOUBLE, MPI_MAX, ranks.get()));
  return {{all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n)},
          {all.begin() + static_cast<std::ptrdiff_t>(n),
           all.begin() + static_cast<std::ptrdiff_t>(2 * n)},
          {all.begin() + static_cast<std::ptrdiff_t>(2 * n), all.end()}};
}

// K-Reduce against MPI allreduce for the models' gradients: every K = 1..N, synchronous and
// (K < N) with stale non-aggregators, which wait only for the previous step's sum. Each row
// gives the slowest rank's time and the slowest aggregator's and non-aggregator's.
Table& time_kreduce(const comm::Communicator& ranks, const std::vector<Buffer>& buffers,
                    const Options& opt, Report& report) {
  const int n = ranks.size();
  Table& table = report.add_table(
      Table("kreduce", fmt::format("K-Reduce vs MPI allreduce per iteration, {} ranks", n),
            {"buffer",
             "floats",
             "strategy",
             {"median us", 1},
             {"min us", 1},
             {"aggregators us", 1},
             {"non-aggregators us", 1},
             {"speedup", 2}}));
  const auto timeout = std::chrono::duration<double>(opt.timeout_s);
  const auto us = [](const std::vector<double>& s) { return 1e6 * median(s); };
  for (const Buffer& b : buffers) {
    if (b.what == "sweep") continue;
    const std::string model = b.what.substr(6);  // "model mnist_mlp" -> "mnist_mlp"
    comm::MpiAllreduceSync allreduce(ranks, timeout);
    const SyncTimes base = time_exchange(ranks, allreduce, b.floats, opt);
    const double base_us = us(base.slowest);
    table.add_row({b.what, b.floats, allreduce.name(), base_us,
                   1e6 * *std::min_element(base.slowest.begin(), base.slowest.end()), "-", "-",
                   1.0});
    report.set_summary(model + "_allreduce_us", base_us);
    double best_us = 0;
    std::string best;
    for (int k = 1; k <= n; ++k) {
      for (const bool stale : {false, true}) {
        if (stale && k == n) continue;  // no non-aggregators: nothing is stale
        comm::KReduceSync sync(ranks, b.floats, comm::KReduceOptions{k, stale, timeout});
        const SyncTimes t = time_exchange(ranks, sync, b.floats, opt, sync.is_aggregator());
        const double t_us = us(t.slowest);
        table.add_row({b.what, b.floats, sync.name(), t_us,
                       1e6 * *std::min_element(t.slowest.begin(), t.slowest.end()), us(t.group),
                       k < n ? Cell(us(t.others)) : Cell("-"), base_us / t_us});
        if (best.empty() || t_us < best_us) {
          best_us = t_us;
          best = sync.name();
        }
      }
    }
    report.set_summary(model + "_kreduce_best_us", best_us);
    report.set_summary(model + "_kreduce_best", best);
  }
  return table;
}

// "4 KiB", "16 MiB": the sweep's sizes are powers of two.
std::string byte_size(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:g} {}", bytes, units[unit]);
}

}  // namespace

int run_grad_sync(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc("conflux-bench grad-sync options (mpirun -np N: all N ranks sum)");
  desc.add_options()("help,h", "show this help")(
      "configs", po::value(&opt.configs)->default_value(opt.configs),
      "comma-separated training configs whose models' parameter counts are timed (empty: "
      "none)")("set", po::value(&opt.overrides)->composing(),
               "config override KEY=VALUE for every config, e.g. data.dir=DIR (repeatable)")(
      "min-bytes", po::value(&opt.min_bytes)->default_value(opt.min_bytes),
      "smallest message of the sweep")(
      "max-bytes", po::value(&opt.max_bytes)->default_value(opt.max_bytes),
      "largest message of the sweep")("factor", po::value(&opt.factor)->default_value(opt.factor),
                                      "ratio of one sweep size to the next")(
      "iters", po::value(&opt.iters)->default_value(opt.iters),
      "timed allreduces per size; the median is reported")(
      "warmup", po::value(&opt.warmup)->default_value(opt.warmup), "untimed first allreduces")(
      "timeout-s", po::value(&opt.timeout_s)->default_value(opt.timeout_s),
      "longest wait for one allreduce (as cluster.peer_timeout_s)")(
      "kreduce", po::value(&opt.kreduce)->default_value(opt.kreduce),
      "also time K-Reduce for the models' parameter counts, K = 1..N, synchronous and with "
      "stale non-aggregators");
  const auto vm = parse_scenario_options("grad-sync", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(world.size() >= 2,
                  "grad-sync needs at least 2 ranks (mpirun -np 2): with 1 rank there is "
                  "nothing to sum and MpiAllreduceSync does nothing");
  CONFLUX_REQUIRE(opt.iters >= 1 && opt.warmup >= 0 && opt.factor >= 2,
                  "grad-sync: --iters >= 1, --warmup >= 0 and --factor >= 2 needed");
  CONFLUX_REQUIRE(opt.min_bytes >= sizeof(float) && opt.min_bytes <= opt.max_bytes,
                  "grad-sync: need 4 <= --min-bytes <= --max-bytes");

  // Rank 0 builds the models; run_agreed makes a bad config fail on every rank, not hang.
  std::vector<Buffer> buffers;
  std::string counts;
  comm::run_agreed(world, [&] {
    if (world.rank() != 0) return;
    for (const std::string& path : split_list(opt.configs)) {
      counts += fmt::format("{} {}\n", parameter_count(path, opt.overrides), path);
    }
  });
  std::stringstream in(world.broadcast(counts, 0));
  for (std::string line; std::getline(in, line);) {
    const std::size_t space = line.find(' ');
    const std::string path = line.substr(space + 1);
    const std::string name = path.substr(path.find_last_of('/') + 1);
    buffers.push_back(Buffer{fmt::format("model {}", name.substr(0, name.rfind(".toml"))),
                             std::stoul(line.substr(0, space))});
  }
  for (std::size_t bytes = opt.min_bytes; bytes <= opt.max_bytes;
       bytes *= static_cast<std::size_t>(opt.factor)) {
    buffers.push_back(Buffer{"sweep", bytes / sizeof(float)});
  }
  std::stable_sort(buffers.begin(), buffers.end(),
                   [](const Buffer& a, const Buffer& b) { return a.floats < b.floats; });

  const comm::Communicator ranks = world.split(0, world.rank());
  comm::MpiAllreduceSync sync(ranks, std::chrono::duration<double>(opt.timeout_s));
  const int n = ranks.size();
  const bool root = world.rank() == 0;
  if (root) {
    fmt::print(
        "grad-sync: {} on {} ranks (MPI_Iallreduce, MPI_SUM, float32, in place), median of {} "
        "after {} warm-up; time of the slowest rank\n"
        "algbw = bytes / time; busbw = algbw * 2(n-1)/n (nccl-tests' definitions)\n\n",
        sync.name(), n, opt.iters, opt.warmup);
  }
  Report report("grad-sync", common);
  report.add_parameters(*vm);
  report.set_parameter("ranks", n);
  // Where the ranks sit decides which hops are shared memory and which are TCP: docs/scaling.md's
  // model reads it from here.
  const int per_host = static_cast<int>(ranks.allreduce_max(ranks.split_node_local().size()));
  report.set_parameter("ranks_per_host", per_host);
  Table& table = report.add_table(
      Table("allreduce", fmt::format("gradient allreduce per iteration, {} ranks", n),
            {"buffer",
             "floats",
             "bytes",
             {"median us", 1},
             {"min us", 1},
             {"algbw GB/s", 3},
             {"busbw GB/s", 3}}));
  Series sweep_bus{.title = "busbw, message-size sweep"};
  Series sweep_alg{.title = "algbw, message-size sweep", .style = "linespoints dashtype 2"};
  Series models{.title = "busbw, model gradients", .style = "points pointsize 2"};
  for (const Buffer& b : buffers) {
    const std::vector<double> seconds = time_exchange(ranks, sync, b.floats, opt).slowest;
    if (!root) continue;
    const double bytes = static_cast<double>(b.floats * sizeof(float));
    const double t = median(seconds);
    const double algbw = bytes / t / 1e9;
    const double busbw = algbw * 2 * (n - 1) / n;
    table.add_row({b.what, b.floats, b.floats * sizeof(float), 1e6 * t,
                   1e6 * *std::min_element(seconds.begin(), seconds.end()), algbw, busbw});
    Series& bus = b.what == "sweep" ? sweep_bus : models;
    bus.x.push_back(bytes);
    bus.y.push_back(busbw);
    if (b.what == "sweep") {
      sweep_alg.x.push_back(bytes);
      sweep_alg.y.push_back(algbw);
    }
  }
  Table* kreduce = opt.kreduce ? &time_kreduce(ranks, buffers, opt, report) : nullptr;
  if (!root) return 0;
  table.print();
  fmt::print("\n");
  if (kreduce != nullptr) {
    kreduce->print();
    fmt::print(
        "speedup = allreduce time / this time; stale non-aggregators wait only for the "
        "previous step's sum\n\n");
  }
  for (const Buffer& b : buffers) {
    if (b.what != "sweep") {
      report.set_summary(b.what.substr(6) + "_parameters", b.floats);
    }
  }
  std::vector<std::pair<double, std::string>> tics;
  for (const double bytes : sweep_bus.x) tics.emplace_back(bytes, byte_size(bytes));
  report.set_plot(Plot{.title = fmt::format("gradient allreduce ({}), {} ranks", sync.name(), n),
                       .xlabel = "message bytes (float32 gradients)",
                       .ylabel = "bandwidth GB/s",
                       .logx = true,
                       .xtics = tics,
                       .series = {sweep_bus, sweep_alg, models}});
  report.write();
  return 0;
}

}  // namespace conflux::bench
