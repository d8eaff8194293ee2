// conflux-bench trainer-step: the training step of one trainer on batches already in memory,
// the figure to set against a framework's own training loop on the same device, model, batch
// and precision (benchmarks/gpu_vs_torch.sh, docs/gpu-benchmark.md). Everything that computes
// is the trainer's own: the model of the config through the configured transform
// (train::make_model), the train::ComputeBackend that train.device chooses (train::choose_device,
// then train::make_backend, as src/train/trainer.cpp makes them), and the step
// order documented in compute_backend.hpp. Only the data path is left out: the batches are
// synthetic 8-bit images (uniform bytes from run.seed) with uniform labels, prepared before
// timing. A backend with pixel_memory() (the GPU, with a transform that makes 8-bit images)
// gets them as data::Batch pixels in that memory and normalises them on the device; otherwise
// they are normalised on the host once, before timing (SampleTransform::normalise), and
// handed over as floats. The transform's random parts never run (no augmentation), as the
// PyTorch side has none.

#include <cblas.h>
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <memory_resource>

#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/log.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/pipeline/batch.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/train/compute_backend.hpp"
#include "conflux/train/device_choice.hpp"
#include "conflux/train/model_setup.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

struct Options {
  std::string config = "configs/cifar10_resnet20.toml";
  std::vector<std::string> overrides;
  int batch = 0;  // 0: train.batch_size
  int warmup = 5;
  int steps = 20;
};

// Synthetic batches are reused in turn, so that consecutive steps see different images (the
// PyTorch side cycles through a few too); their content changes no step's cost.
constexpr int kBatches = 2;

// One synthetic batch: its bytes, kept to refill the batch's pixel buffer, and the batch the
// backend is handed.
struct SyntheticBatch {
  std::vector<std::uint8_t> bytes;  // n * C * H * W pixels
  data::Batch batch;
};

SyntheticBatch make_batch(int index, int n, int classes, const data::SampleTransform& transform,
                          std::uint64_t seed, std::pmr::memory_resource* pixel_memory) {
  const data::ImageShape shape = transform.output_shape();
  SyntheticBatch b;
  b.bytes.resize(static_cast<std::size_t>(n) * shape.size());
  Rng rng{seed, 0x747273746570 /* "trstep": a stream of its own */,
          static_cast<std::uint64_t>(index)};
  for (std::uint8_t& p : b.bytes) p = static_cast<std::uint8_t>(rng.next() >> 56);
  data::Batch& batch = b.batch;
  batch.step_samples = static_cast<std::size_t>(n);
  for (int i = 0; i < n; ++i) {
    batch.labels.push_back(
        static_cast<model::Label>(rng.below(static_cast<std::uint64_t>(classes))));
    batch.samples.push_back(static_cast<std::uint32_t>(index * n + i));
  }
  if (pixel_memory != nullptr) {
    batch.encoding = data::ImageEncoding::kPixels;
    batch.pixels = data::PixelBuffer(pixel_memory);
    batch.pixels.resize(b.bytes.size());
    std::copy(b.bytes.begin(), b.bytes.end(), batch.pixels.data());
  } else {
    batch.encoding = data::ImageEncoding::kFloat32;
    batch.images.resize({n, shape.channels, shape.height, shape.width});
    transform.normalise(b.bytes.data(), static_cast<std::size_t>(n), batch.images.data.data());
  }
  return b;
}

// The steps of one trainer, in compute_backend.hpp's order.
struct StepLoop {
  train::ComputeBackend& backend;
  std::vector<SyntheticBatch>& batches;
  float grad_scale = 1;
  double lr = 0;           // train.lr throughout: the schedule changes no step's cost
  std::uint64_t step = 0;  // the global step: dropout masks
  std::size_t next = 0;    // the batch the next stage() hands over
  bool staged = false;     // a batch was staged during the previous step
};

// Hands the next batch to the backend. A GPU backend takes the batch's pixel buffer and gives
// an idle one of its own back; only when that one is not of the batch's size (the first
// stages: it starts empty) is it refilled, so steady-state steps copy nothing on the host.
void stage_next(StepLoop& loop) {
  SyntheticBatch& b = loop.batches[loop.next];
  loop.next = (loop.next + 1) % loop.batches.size();
  data::Batch& batch = b.batch;
  if (batch.encoding == data::ImageEncoding::kPixels && batch.pixels.size() != b.bytes.size()) {
    batch.pixels.resize(b.bytes.size());
    std::copy(b.bytes.begin(), b.bytes.end(), batch.pixels.data());
  }
  loop.backend.stage(batch);
}

// `count` steps; after the run's very last one (`last`) nothing is staged ahead, as the
// trainer stages nothing after its last batch.
void run_steps(StepLoop& loop, int count, bool last) {
  for (int i = 0; i < count; ++i) {
    if (!loop.staged) stage_next(loop);
    loop.backend.compute(loop.grad_scale, loop.step++);
    loop.staged = loop.backend.stages_ahead() && !(last && i + 1 == count);
    if (loop.staged) stage_next(loop);  // overlaps the device's work
    if (loop.backend.exchange() != comm::Merged::kNone) loop.backend.apply(loop.lr);
  }
}

using Clock = std::chrono::steady_clock;

// steady_clock is CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic(): a caller
// sampling the GPU's utilisation picks the samples of the measured window by these stamps.
double monotonic_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// What the measured steps gave.
struct Measured {
  double warmup_s = 0, seconds = 0;
  Clock::time_point start, end;
  model::LossResult losses;
  std::size_t peak_device_bytes = 0;
  std::string computed;  // ComputeBackend::compute_summary(): e.g. the GPU's CUDA graphs
};

// The warm-up (its losses waited for and dropped, so that the clock starts on an idle device),
// then the measured steps, timed up to take_losses(): the GPU's wait for its queued work.
Measured measure(StepLoop& loop, const Options& opt) {
  Measured m;
  const auto warm = Clock::now();
  run_steps(loop, opt.warmup, false);
  loop.backend.take_losses();
  m.start = Clock::now();
  m.warmup_s = std::chrono::duration<double>(m.start - warm).count();
  gpu::reset_device_memory_peak();
  run_steps(loop, opt.steps, true);
  m.losses = loop.backend.take_losses();
  m.end = Clock::now();
  m.seconds = std::chrono::duration<double>(m.end - m.start).count();
  m.peak_device_bytes = gpu::device_memory_stats().peak_bytes;
  m.computed = loop.backend.compute_summary();
  return m;
}

// The trainer's device and backend, built as src/train/trainer.cpp builds them, connected.
struct BuiltTrainer {
  train::DeviceChoice device;
  std::unique_ptr<train::ComputeBackend> backend;
  bool gpu() const noexcept { return device.device == train::ComputeDevice::kGpu; }
};

BuiltTrainer build_trainer(const Config& config, const comm::Communicator& world,
                           const data::SampleTransform& transform, int classes, int batch) {
  const Logger log(world.rank());
  BuiltTrainer t;
  t.device = train::choose_device(config, world, &log);
  const train::BackendOptions options{
      .config = &config,
      .trainers = &world,
      .timeout = std::chrono::duration<double>(config.cluster().peer_timeout_s),
      .num_classes = classes,
      .max_batch = static_cast<std::size_t>(batch),
      .device = t.device,
      .transform = &transform};
  model::Model net = train::make_model(config, transform, classes, &log);
  t.backend = train::make_backend(std::move(net), options);
  t.backend->connect();
  return t;
}

void check_options(const Options& opt, const po::variables_map& vm,
                   const comm::Communicator& world) {
  CONFLUX_REQUIRE(world.size() == 1, "trainer-step runs on 1 rank, not {}", world.size());
  CONFLUX_REQUIRE(vm.count("batch") == 0 || opt.batch >= 1,
                  "trainer-step: --batch must be at least 1, not {}", opt.batch);
  CONFLUX_REQUIRE(opt.warmup >= 1 && opt.steps >= 1,
                  "trainer-step: --warmup and --steps must be at least 1, not {} and {}",
                  opt.warmup, opt.steps);
}

// What the run was: the trainer as built.
struct RunInfo {
  std::string config;
  std::string device;     // "CPU" or the GPU's description
  std::string precision;  // what the trainer computes in: train.precision on a GPU, else fp32
  std::string input;      // how the batches reach the model
  std::string sync;
  std::size_t params = 0;
  int batch = 0;
  int classes = 0;
  data::ImageShape image;
  bool gpu = false;
};

void report_result(Report& report, const RunInfo& run, const Options& opt, const Measured& m) {
  const double samples = static_cast<double>(run.batch) * opt.steps;
  const double rate = samples / m.seconds;
  const double step_ms = 1e3 * m.seconds / opt.steps;
  const double counted = samples - m.losses.skipped;
  const double loss = counted > 0 ? m.losses.loss_sum / counted : std::nan("");
  const double peak_mib = static_cast<double>(m.peak_device_bytes) / (1 << 20);
  fmt::print(
      "trainer-step: {}, 1 trainer on {} ({}), batch {} of [{},{},{}] synthetic 8-bit images "
      "in memory ({}), {} classes, {} parameters, {} warm-up + {} measured steps\n",
      run.config, run.device, run.precision, run.batch, run.image.channels, run.image.height,
      run.image.width, run.input, run.classes, run.params, opt.warmup, opt.steps);
  fmt::print(
      "measured: {:.1f} samples/s, {:.3f} ms/step (mean of {} steps, {:.3f} s wall clock up to "
      "the last loss; warm-up {:.2f} s); loss {:.4f} per sample{}; peak device memory {:.1f} "
      "MiB\n",
      rate, step_ms, opt.steps, m.seconds, m.warmup_s, loss,
      std::isfinite(loss) ? "" : " (NOT FINITE: the trainer is broken)", peak_mib);
  report.set_parameter("batch", run.batch);
  report.set_summary("device", run.device);
  report.set_summary("device_kind", run.gpu ? "gpu" : "cpu");
  report.set_summary("precision", run.precision);
  report.set_summary("input", run.input);
  report.set_summary("sync", run.sync);
  report.set_summary("batch", run.batch);
  report.set_summary("classes", run.classes);
  report.set_summary("params", static_cast<std::int64_t>(run.params));
  report.set_summary(
      "image", fmt::format("{}x{}x{}", run.image.channels, run.image.height, run.image.width));
  report.set_summary("warmup", opt.warmup);
  report.set_summary("steps", opt.steps);
  report.set_summary("samples_per_s", rate);
  report.set_summary("step_ms", step_ms);
  report.set_summary("measured_s", m.seconds);
  report.set_summary("warmup_s", m.warmup_s);
  report.set_summary("loss", loss);
  report.set_summary("loss_finite", std::isfinite(loss));
  report.set_summary("peak_device_bytes", static_cast<std::int64_t>(m.peak_device_bytes));
  report.set_summary("computed", m.computed);
  report.set_summary("window_start_monotonic_s", monotonic_seconds(m.start));
  report.set_summary("window_end_monotonic_s", monotonic_seconds(m.end));
}

}  // namespace

int run_trainer_step(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc("conflux-bench trainer-step options (1 rank)");
  desc.add_options()("help,h", "show this help")(
      "config", po::value(&opt.config)->default_value(opt.config), "training config")(
      "set", po::value(&opt.overrides)->composing(), "config override KEY=VALUE (repeatable)")(
      "batch", po::value(&opt.batch), "samples per step (default train.batch_size)")(
      "warmup", po::value(&opt.warmup)->default_value(opt.warmup), "unmeasured steps first")(
      "steps", po::value(&opt.steps)->default_value(opt.steps), "measured steps");
  const auto vm = parse_scenario_options("trainer-step", args, desc, common, world);
  if (!vm) return 0;
  check_options(opt, *vm, world);
  const Config config = load_config_file(opt.config, environment_sources(opt.overrides, "bench"));
  openblas_set_num_threads(config.cluster().blas_threads);  // as the trainer does
  const int batch = opt.batch > 0 ? opt.batch : config.train().batch_size;
  // The data set only for what the trainer derives from it: the transform's input shape and
  // the class count. No sample of it is read.
  const data::SourceSplits data = train::open_training_data(config);
  const data::SampleTransform transform = train::make_transform(config, *data.train);
  const int classes = data.train->info().num_classes;
  const BuiltTrainer trainer = build_trainer(config, world, transform, classes, batch);
  train::ComputeBackend& backend = *trainer.backend;
  std::pmr::memory_resource* pixel_memory = backend.pixel_memory();
  std::vector<SyntheticBatch> batches;
  for (int i = 0; i < kBatches; ++i) {
    batches.push_back(make_batch(i, batch, classes, transform, config.run().seed, pixel_memory));
  }
  StepLoop loop{.backend = backend,
                .batches = batches,
                .grad_scale = 1.0f / static_cast<float>(batch),
                .lr = config.train().lr};
  const RunInfo run{.config = opt.config,
                    .device = backend.device_name(),
                    .precision = trainer.gpu() ? config.train().precision : "fp32",
                    .input = pixel_memory != nullptr
                                 ? "8-bit pixels, normalised on the device"
                                 : "floats, normalised on the host before timing",
                    .sync = backend.sync_name(),
                    .params = backend.host_model().params().size(),
                    .batch = batch,
                    .classes = classes,
                    .image = transform.output_shape(),
                    .gpu = trainer.gpu()};
  const Measured m = measure(loop, opt);
  Report report("trainer-step", common);
  report.add_parameters(*vm);
  report_result(report, run, opt, m);
  report.write();
  return 0;
}

}  // namespace conflux::bench
