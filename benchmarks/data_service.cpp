// conflux-bench data-service: what the data service buys a trainer whose own preprocessing is
// the bottleneck. The trainer's compute step is a SIMULATED GPU STEP (a fixed sleep that
// leaves its core free, as a real GPU step would); the pipeline is the heavy CIFAR-10
// augmentation, or with --images an image folder read and decoded per sample (random resized
// crop + flip + normalise, as ImageNet-style training does). It sweeps the offload ratio, then
// compares the data plane's goodput for large batches with plain MPI_Send/MPI_Recv between the same
// two ranks in the same run.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include <chrono>
#include <limits>
#include <optional>

#include "conflux/data/io/catalog.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "pipeline_harness.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"
#include "tcp_stream.hpp"

namespace conflux::bench {

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

namespace {

struct Options : PipelineSettings {
  Options() { warmup = 6; }
  int steps = 60;
  std::string ratios = "0,0.25,0.4,0.5,0.6,0.75,1";
  int goodput_batch = 2048;
  int goodput_steps = 30;
  std::size_t tcp_mib = 0;  // 0: no raw TCP stream in the goodput test
  int rounds = 3;
};

// One measurement with every worker rank serving: the trainer (rank 0) draws `warmup + steps`
// batches; the others serve until its goodbye.
PipelineRun measure(const comm::Communicator& service, const data::SampleSource& dataset,
                    const data::SampleTransform& transform, const Options& opt, int batch,
                    int steps, double ratio, double gpu_step_ms) {
  PipelineRunOptions o = opt.run_options(service, service.size() - 1, dataset, transform);
  o.batch = batch;
  o.steps = steps;
  o.gpu_step_ms = gpu_step_ms;
  o.offload_ratio = ratio;
  return run_pipeline(o);
}

// What the ranks' cores deliver together: every rank builds `steps` batches of its own at the
// same time (no service, no GPU step), one preprocessing thread each; the summed samples/s.
// Against the trainer alone (ratio 0) this is the most any offload ratio can reach on these
// cores: where two ranks slow each other down (shared caches, memory bandwidth, or virtual CPUs
// that are hyper-threads of one core), it is less than the rank count.
double all_ranks_building(const comm::Communicator& service, const data::SampleSource& dataset,
                          const data::SampleTransform& transform, const Options& opt) {
  data::BatchBuilder builder(dataset, transform, opt.local_threads);
  model::Tensor images;
  std::vector<model::Label> labels;
  std::vector<std::uint32_t> samples(static_cast<std::size_t>(opt.batch));
  const std::size_t offset = static_cast<std::size_t>(service.rank()) * 7919;  // other samples
  const auto build = [&](int step) {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i] =
          static_cast<std::uint32_t>((offset + step * samples.size() + i) % dataset.size());
    }
    builder.build_train(samples, 1, 0, images, labels);
  };
  for (int step = 0; step < opt.warmup; ++step) build(step);
  service.barrier();
  const auto start = Clock::now();
  for (int step = 0; step < opt.steps; ++step) build(opt.warmup + step);
  std::vector<double> rate{static_cast<double>(opt.steps) * opt.batch /
                           std::chrono::duration<double>(Clock::now() - start).count()};
  service.allreduce_sum(rate, std::chrono::seconds(600));
  return rate[0];
}

// Plain MPI_Send/MPI_Recv of `bytes`-byte messages from rank 1 to rank 0; bytes/s on rank 0.
double plain_bandwidth(const comm::Communicator& service, std::size_t bytes, int reps, int warmup) {
  std::vector<float> buffer(bytes / sizeof(float));
  const int count = static_cast<int>(buffer.size());
  Clock::time_point start;
  for (int k = 0; k < warmup + reps; ++k) {
    if (k == warmup) start = Clock::now();
    if (service.rank() == 0) {
      CONFLUX_MPI_CHECK(
          MPI_Recv(buffer.data(), count, MPI_FLOAT, 1, 7, service.get(), MPI_STATUS_IGNORE));
    } else if (service.rank() == 1) {
      CONFLUX_MPI_CHECK(MPI_Send(buffer.data(), count, MPI_FLOAT, 0, 7, service.get()));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  service.barrier();
  return static_cast<double>(bytes) * reps / seconds;
}

// The goodput table: plain MPI, the data service and, with --tcp-mib, the raw TCP stream (all
// from rank 1 to rank 0), as fractions of plain MPI and of raw TCP, round by round.
void report_goodput(Report& report, const Options& opt, std::size_t batch_bytes,
                    const std::vector<double>& plain, const std::vector<double>& served,
                    const std::vector<double>& tcp) {
  const bool with_tcp = !tcp.empty();
  std::vector<Column> columns{"path", {"MiB/s", 0}, {"% of plain", 0}, "fraction per round"};
  if (with_tcp) columns.insert(columns.end(), {{"% of TCP", 0}, "of TCP per round"});
  Table& goodput = report.add_table(
      Table("goodput",
            fmt::format("goodput, batches of {} samples ({:.1f} MiB of images + labels), "
                        "median of {} interleaved rounds",
                        opt.goodput_batch, batch_bytes / 1048576.0, opt.rounds),
            columns));
  const auto row = [&](std::string path, const std::vector<double>& x) {
    std::vector<Cell> cells{std::move(path), median(x) / 1048576.0, 100 * median(ratios(x, plain)),
                            &x == &plain ? "-" : per_round(ratios(x, plain))};
    if (with_tcp) {
      cells.insert(cells.end(),
                   {100 * median(ratios(x, tcp)), &x == &tcp ? "-" : per_round(ratios(x, tcp))});
    }
    goodput.add_row(std::move(cells));
  };
  row("plain MPI_Send/MPI_Recv", plain);
  row("data service (ratio 1)", served);
  if (with_tcp) row(fmt::format("raw TCP socket stream, {} MiB", opt.tcp_mib), tcp);
  goodput.print();
  report.set_summary("goodput_fraction", median(ratios(served, plain)));
  if (with_tcp) {
    report.set_summary("goodput_tcp_fraction", median(ratios(served, tcp)));
    report.set_summary("plain_mpi_tcp_fraction", median(ratios(plain, tcp)));
  }
}

}  // namespace

int run_data_service(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc(
      "conflux-bench data-service options (mpirun -np 2: 1 trainer + 1 worker)");
  desc.add_options()("help,h", "show this help")(
      "steps", po::value(&opt.steps)->default_value(opt.steps), "measured steps per ratio")(
      "ratios", po::value(&opt.ratios)->default_value(opt.ratios), "offload ratios to sweep")(
      "goodput-batch", po::value(&opt.goodput_batch)->default_value(opt.goodput_batch),
      "batch size of the goodput test")(
      "goodput-steps", po::value(&opt.goodput_steps)->default_value(opt.goodput_steps),
      "measured batches of the goodput test (0: no goodput test)")(
      "tcp-mib", po::value(&opt.tcp_mib)->default_value(opt.tcp_mib),
      "MiB the worker streams to the trainer over a plain TCP socket in each goodput round, "
      "so that the goodput is also a fraction of raw TCP measured in the same run (0: none)")(
      "rounds", po::value(&opt.rounds)->default_value(opt.rounds),
      "interleaved repetitions; medians are reported");
  opt.add_pipeline_options(desc);
  opt.add_image_options(desc);
  const auto vm = parse_scenario_options("data-service", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(world.size() >= 2,
                  "data-service needs 1 trainer + at least 1 worker rank (mpirun -np 2)");
  const std::vector<double> ratios = parse_ratio_list(opt.ratios, "--ratios");
  CONFLUX_REQUIRE(opt.rounds >= 1 && opt.steps >= 1 && opt.batch >= 1 && opt.goodput_batch >= 1,
                  "--rounds, --steps, --batch and --goodput-batch must be at least 1");
  CONFLUX_REQUIRE(opt.goodput_steps >= 0, "--goodput-steps must be at least 0 (0: no goodput)");
  const comm::Communicator service = world.split(0, world.rank());
  const PipelineData input = pipeline_data(opt);
  const data::SampleSource& dataset = *input.source;
  const bool root = world.rank() == 0;
  Report report("data-service", common);
  report.add_parameters(*vm);
  report.set_parameter("workers", world.size() - 1);
  if (root) {
    fmt::print(
        "data-service: 1 trainer + {} worker rank(s), {}, batch {}, {} measured steps per "
        "ratio\ntrainer compute = SIMULATED GPU STEP (sleep {} ms per step, not real compute)\n\n",
        world.size() - 1, input.description, opt.batch, opt.steps, opt.gpu_step_ms);
  }
  const data::SampleTransform& heavy = *input.transform;
  // Rounds interleave the ratios so that drift in the machine's load hits them alike; each
  // ratio's speedup is taken against the first ratio of the same round, then the median.
  std::vector<std::vector<double>> rates(ratios.size()), speedups(ratios.size());
  std::vector<double> capacity;  // all ranks building at once, against the first ratio
  std::vector<std::size_t> worker_batches(ratios.size());
  for (int round = 0; round < opt.rounds; ++round) {
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      const PipelineRun run =
          measure(service, dataset, heavy, opt, opt.batch, opt.steps, ratios[i], opt.gpu_step_ms);
      rates[i].push_back(run.samples_per_s);
      speedups[i].push_back(run.samples_per_s / rates[0].back());
      worker_batches[i] = run.stats.worker;
    }
    capacity.push_back(all_ranks_building(service, dataset, heavy, opt) / rates[0].back());
  }
  if (root) {
    Table& sweep = report.add_table(Table(
        "sweep",
        fmt::format("offload-ratio sweep (median of {} interleaved rounds; speedup against "
                    "ratio {:.2f} in the same round)",
                    opt.rounds, ratios.front()),
        {{"ratio", 2}, {"samples/s", 0}, {"speedup", 2}, "worker batches", "speedup per round"}));
    std::size_t best = 0;
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      if (median(speedups[i]) > median(speedups[best])) best = i;
      sweep.add_row({ratios[i], median(rates[i]), median(speedups[i]), worker_batches[i],
                     per_round(speedups[i])});
    }
    sweep.print();
    fmt::print(
        "\nbest: ratio {:.2f} reaches {:.2f}x the samples/s of ratio {:.2f} (median of {} "
        "interleaved rounds; ratio 0 = the trainer preprocessing alone)\n",
        ratios[best], median(speedups[best]), ratios.front(), opt.rounds);
    fmt::print(
        "cores' capacity: all {} ranks building batches at once (no service) reach {:.2f}x the "
        "samples/s of ratio {:.2f} (rounds [{:.2f}]); the best ratio reaches {:.0f} % of that\n\n",
        world.size(), median(capacity), ratios.front(), fmt::join(capacity, " "),
        100 * median(speedups[best]) / median(capacity));
    report.set_summary("best_ratio", ratios[best]);
    report.set_summary("best_speedup", median(speedups[best]));
    report.set_summary("all_ranks_building_speedup", median(capacity));
    std::vector<double> medians;
    for (const auto& r : rates) medians.push_back(median(r));
    const double bound = opt.gpu_step_ms > 0 ? 1e3 * opt.batch / opt.gpu_step_ms
                                             : std::numeric_limits<double>::infinity();
    Plot plot{
        .title = fmt::format("data service: 1 trainer + {} worker(s), {}, SIMULATED GPU step {} ms",
                             world.size() - 1,
                             opt.images.empty() ? input.description : std::string("image folder"),
                             opt.gpu_step_ms),
        .xlabel = "offload ratio (share of batches built by workers)",
        .ylabel = "samples/s at the trainer (median)",
        .series = {Series{.title = "measured", .x = ratios, .y = medians}}};
    add_ceiling(plot, bound, "SIMULATED GPU step bound, samples/s");
    report.set_plot(std::move(plot));
  }

  if (opt.goodput_steps == 0) {
    if (root) report.write();
    return 0;
  }
  // Goodput: large batches, a cheap pipeline, no compute step, every batch from the worker. It
  // measures the data plane, so it runs on CIFAR-10 in memory whatever --images says.
  std::optional<data::InMemorySource> cifar;
  const data::SampleSource& plane =
      opt.images.empty() ? dataset
                         : cifar.emplace(data::load_dataset("cifar10", opt.data_dir).train);
  const data::SampleTransform cheap(normalise_only(), plane.info().shape);
  const std::size_t batch_bytes =
      static_cast<std::size_t>(opt.goodput_batch) * cheap.output_shape().size() * sizeof(float);
  std::vector<double> plain, served, tcp;
  // The raw TCP stream runs the data's way, worker (rank 1) to trainer (rank 0).
  std::optional<TcpStream> stream;
  if (opt.tcp_mib > 0) stream.emplace(service, TcpStreamOptions{.sender = 1});
  std::vector<char> tcp_buffer(service.rank() < 2 ? opt.tcp_mib << 20 : 0, 1);
  if (stream) stream->measure(tcp_buffer);  // warm-up: TCP's window, the buffer's pages
  for (int round = 0; round < opt.rounds; ++round) {
    plain.push_back(plain_bandwidth(service, batch_bytes, opt.goodput_steps, 3));
    served.push_back(
        measure(service, plane, cheap, opt, opt.goodput_batch, opt.goodput_steps, 1.0, 0)
            .payload_bytes_per_s);
    if (stream) tcp.push_back(stream->measure(tcp_buffer));
  }
  if (root) {
    report_goodput(report, opt, batch_bytes, plain, served, tcp);
    report.write();
  }
  return 0;
}

}  // namespace conflux::bench
