// conflux-bench data-service: what the data service buys a trainer whose own preprocessing is
// the bottleneck. The trainer's compute step is a SIMULATED GPU STEP (a fixed sleep that
// leaves its core free, as a real GPU step would); the pipeline is the heavy CIFAR-10
// augmentation. It sweeps the offload ratio, then compares the data plane's goodput for large
// batches with plain MPI_Send/MPI_Recv between the same two ranks in the same run.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "conflux/data/batch_loader.hpp"
#include "conflux/data/batch_server.hpp"
#include "conflux/data/catalog.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string data_dir = "../shared/data";
  int batch = 128;
  int steps = 60;
  int warmup = 6;
  double gpu_step_ms = 2;
  std::string ratios = "0,0.25,0.4,0.5,0.6,0.75,1";
  int local_threads = 1;
  int worker_threads = 1;
  int goodput_batch = 2048;
  int goodput_steps = 30;
  int credits = 4;
  int send_buffers = 3;
  int resolution = 32;
  int rounds = 3;
};

// Stands in for the GPU forward/backward: sleeps, so the trainer's core stays free for its
// preprocessing thread, as it would while a GPU computes. Not a real compute step.
void simulated_gpu_step(double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

data::TransformOptions heavy_cifar_pipeline(int resolution) {
  data::TransformOptions o;
  o.resized_crop = resolution;
  o.hflip = true;
  o.rotation_degrees = 15;
  o.brightness = o.contrast = o.saturation = 0.4f;
  // SimCLR's recipe: blur kernel about a tenth of the image side, applied to half the samples.
  o.blur_kernel = std::max(3, resolution / 10) | 1;
  o.blur_probability = 0.5f;
  o.cutout_size = 8;
  o.mean = {0.4914f, 0.4822f, 0.4465f};
  o.std = {0.2470f, 0.2435f, 0.2616f};
  return o;
}

data::TransformOptions normalise_only() {
  data::TransformOptions o;
  o.mean = {0.5f};
  o.std = {0.25f};
  return o;
}

struct Run {
  double samples_per_s = 0;
  double payload_bytes_per_s = 0;
  data::LoaderStats stats;
};

// One measurement on both sides: the trainer (rank 0) draws `warmup + steps` batches; every
// other rank serves until the trainer's goodbye.
Run measure(const comm::Communicator& service, const data::Dataset& dataset,
            const data::SampleTransform& transform, const Options& opt, int batch, int steps,
            double ratio, double gpu_step_ms) {
  Run run;
  const int workers = service.size() - 1;
  if (service.rank() != 0) {
    data::BatchServerOptions o;
    o.comm = &service;
    o.trainer_ranks = {0};
    o.worker = service.rank() - 1;
    o.dataset = &dataset;
    o.transform = &transform;
    o.threads = opt.worker_threads;
    o.seed = 1;
    o.global_batch = static_cast<std::size_t>(batch);
    o.send_buffers = opt.send_buffers;
    data::BatchServer(std::move(o)).serve();
    service.barrier();
    return run;
  }
  data::BatchLoaderOptions o;
  o.dataset = &dataset;
  o.transform = &transform;
  o.seed = 1;
  o.epochs = 1000;  // never reached: the measurement stops early
  o.global_batch = static_cast<std::size_t>(batch);
  o.threads = opt.local_threads;
  o.prefetch = 4;
  o.offload_ratio = ratio;
  o.client.comm = &service;
  o.client.credits = opt.credits;
  for (int w = 0; w < workers; ++w) o.client.worker_ranks.push_back(w + 1);
  data::BatchLoader loader(std::move(o));
  Clock::time_point start;
  std::uint64_t bytes_at_start = 0;
  for (int k = 0; k < opt.warmup + steps; ++k) {
    if (k == opt.warmup) {
      start = Clock::now();
      bytes_at_start = loader.stats().client.payload_bytes;
    }
    loader.next();
    if (gpu_step_ms > 0) simulated_gpu_step(gpu_step_ms);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run.stats = loader.stats();
  run.samples_per_s = static_cast<double>(steps) * batch / seconds;
  run.payload_bytes_per_s =
      static_cast<double>(run.stats.client.payload_bytes - bytes_at_start) / seconds;
  loader.finish();
  service.barrier();
  return run;
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

std::vector<double> parse_ratios(const std::string& text) {
  std::vector<double> ratios;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      ratios.push_back(std::stod(item));
    } catch (const std::exception&) {
      CONFLUX_INPUT_ERROR("--ratios: '{}' is not a number", item);
    }
    CONFLUX_REQUIRE(ratios.back() >= 0 && ratios.back() <= 1, "--ratios: {} is not in [0, 1]",
                    item);
  }
  CONFLUX_REQUIRE(!ratios.empty(), "--ratios: give at least one ratio");
  return ratios;
}

}  // namespace

int run_data_service(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  po::options_description desc("conflux-bench data-service options");
  desc.add_options()("help,h", "show this help")(
      "data-dir", po::value(&opt.data_dir)->default_value(opt.data_dir), "dataset directory")(
      "batch", po::value(&opt.batch)->default_value(opt.batch), "batch size of the sweep")(
      "steps", po::value(&opt.steps)->default_value(opt.steps), "measured steps per ratio")(
      "warmup", po::value(&opt.warmup)->default_value(opt.warmup), "unmeasured first steps")(
      "gpu-step-ms", po::value(&opt.gpu_step_ms)->default_value(opt.gpu_step_ms),
      "length of the SIMULATED GPU step (a sleep)")(
      "ratios", po::value(&opt.ratios)->default_value(opt.ratios), "offload ratios to sweep")(
      "local-threads", po::value(&opt.local_threads)->default_value(opt.local_threads),
      "trainer preprocessing threads")(
      "worker-threads", po::value(&opt.worker_threads)->default_value(opt.worker_threads),
      "preprocessing threads per worker rank")(
      "goodput-batch", po::value(&opt.goodput_batch)->default_value(opt.goodput_batch),
      "batch size of the goodput test")(
      "goodput-steps", po::value(&opt.goodput_steps)->default_value(opt.goodput_steps),
      "measured batches of the goodput test")(
      "credits", po::value(&opt.credits)->default_value(opt.credits),
      "requests in flight per worker (data.worker_credits)")(
      "send-buffers", po::value(&opt.send_buffers)->default_value(opt.send_buffers),
      "batches a worker holds while sending (data.worker_send_buffers)")(
      "rounds", po::value(&opt.rounds)->default_value(opt.rounds),
      "interleaved repetitions; medians are reported")(
      "resolution", po::value(&opt.resolution)->default_value(opt.resolution),
      "output size of the random resized crop (32 = CIFAR's own; 96 or 224 = "
      "ImageNet-style upscaled training)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    if (world.rank() == 0) std::cout << desc << "\n";
    return 0;
  }
  CONFLUX_REQUIRE(world.size() >= 2,
                  "data-service needs 1 trainer + at least 1 worker rank (mpirun -np 2)");
  const std::vector<double> ratios = parse_ratios(opt.ratios);
  CONFLUX_REQUIRE(opt.rounds >= 1 && opt.steps >= 1 && opt.batch >= 1 && opt.goodput_batch >= 1,
                  "--rounds, --steps, --batch and --goodput-batch must be at least 1");
  const comm::Communicator service = world.split(0, world.rank());
  const data::Dataset dataset = data::load_dataset("cifar10", opt.data_dir).train;
  const bool root = world.rank() == 0;
  if (root) {
    fmt::print(
        "data-service: 1 trainer + {} worker rank(s), CIFAR-10 heavy augmentation, batch "
        "{}, {} measured steps per ratio, random resized crop to {}x{}\n"
        "trainer compute = SIMULATED GPU STEP (sleep {} ms per step, not real compute)\n\n"
        "{:>6}  {:>10}  {:>8}  {:>15}\n",
        world.size() - 1, opt.batch, opt.steps, opt.resolution, opt.resolution, opt.gpu_step_ms,
        "ratio", "samples/s", "speedup", "worker batches");
  }
  const data::SampleTransform heavy(heavy_cifar_pipeline(opt.resolution), dataset.shape);
  // Rounds interleave the ratios so that drift in the machine's load hits them alike; each
  // ratio's speedup is taken against the first ratio of the same round, then the median.
  std::vector<std::vector<double>> rates(ratios.size()), speedups(ratios.size());
  std::vector<std::size_t> worker_batches(ratios.size());
  for (int round = 0; round < opt.rounds; ++round) {
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      const Run run =
          measure(service, dataset, heavy, opt, opt.batch, opt.steps, ratios[i], opt.gpu_step_ms);
      rates[i].push_back(run.samples_per_s);
      speedups[i].push_back(run.samples_per_s / rates[0].back());
      worker_batches[i] = run.stats.worker;
    }
  }
  if (root) {
    std::size_t best = 0;
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      if (median(speedups[i]) > median(speedups[best])) best = i;
      fmt::print("{:>6.2f}  {:>10.0f}  {:>7.2f}x  {:>15}   [{:.2f}]\n", ratios[i], median(rates[i]),
                 median(speedups[i]), worker_batches[i], fmt::join(speedups[i], " "));
    }
    fmt::print(
        "\nbest: ratio {:.2f} reaches {:.2f}x the samples/s of ratio {:.2f} (median of {} "
        "interleaved rounds; ratio 0 = the trainer preprocessing alone)\n\n",
        ratios[best], median(speedups[best]), ratios.front(), opt.rounds);
  }

  // Goodput: large batches, a cheap pipeline, no compute step, every batch from the worker.
  const data::SampleTransform cheap(normalise_only(), dataset.shape);
  const std::size_t batch_bytes =
      static_cast<std::size_t>(opt.goodput_batch) * cheap.output_shape().size() * sizeof(float);
  std::vector<double> plain, served, fractions;
  for (int round = 0; round < opt.rounds; ++round) {
    plain.push_back(plain_bandwidth(service, batch_bytes, opt.goodput_steps, 3));
    served.push_back(
        measure(service, dataset, cheap, opt, opt.goodput_batch, opt.goodput_steps, 1.0, 0)
            .payload_bytes_per_s);
    fractions.push_back(served.back() / plain.back());
  }
  if (root) {
    fmt::print(
        "goodput, batches of {} samples ({:.1f} MiB of images + labels), median of {} "
        "interleaved rounds:\n"
        "  plain MPI_Send/MPI_Recv  {:8.0f} MiB/s\n"
        "  data service (ratio 1)   {:8.0f} MiB/s  = {:.0f} % of plain   [{:.2f}]\n",
        opt.goodput_batch, batch_bytes / 1048576.0, opt.rounds, median(plain) / 1048576.0,
        median(served) / 1048576.0, 100 * median(fractions), fmt::join(fractions, " "));
  }
  return 0;
}

}  // namespace conflux::bench
