#include "pipeline_harness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "conflux/core/error.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/io/image_folder_source.hpp"

namespace conflux::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

void check(const PipelineRunOptions& o) {
  CONFLUX_REQUIRE(o.service != nullptr && o.dataset != nullptr && o.transform != nullptr,
                  "run_pipeline: service, dataset and transform must be set");
  CONFLUX_REQUIRE(o.workers >= 0 && o.workers < o.service->size(),
                  "run_pipeline: {} worker(s) need {} ranks; the communicator has {}", o.workers,
                  o.workers + 1, o.service->size());
  CONFLUX_REQUIRE(o.batch >= 1 && o.warmup_steps >= 0 && (o.steps >= 1 || o.duration_s > 0),
                  "run_pipeline: batch >= 1, warm-up steps >= 0 and steps >= 1 (or a duration) "
                  "needed; got batch {}, {} warm-up, {} steps",
                  o.batch, o.warmup_steps, o.steps);
  CONFLUX_REQUIRE(o.offload_ratio >= 0 && o.offload_ratio <= 1,
                  "run_pipeline: offload ratio {} is not in [0, 1]", o.offload_ratio);
  CONFLUX_REQUIRE(o.fault_worker < o.workers,
                  "run_pipeline: fault_worker {} names a worker the run does not have ({})",
                  o.fault_worker, o.workers);
}

void serve(const PipelineRunOptions& opt, int worker) {
  data::BatchServerOptions o;
  o.comm = opt.service;
  o.trainer_ranks = {0};
  o.worker = worker;
  o.source = opt.dataset;
  o.transform = opt.transform;
  o.threads = opt.worker_threads;
  o.seed = 1;
  o.global_batch = static_cast<std::size_t>(opt.batch);
  o.send_buffers = opt.send_buffers;
  if (worker == opt.fault_worker) o.fault = opt.fault;
  data::BatchServer(std::move(o)).serve();
}

PipelineRun train(const PipelineRunOptions& opt) {
  data::BatchLoaderOptions o;
  o.source = opt.dataset;
  o.transform = opt.transform;
  o.seed = 1;
  o.epochs = 1 << 20;  // never reached: the measurement stops first
  o.global_batch = static_cast<std::size_t>(opt.batch);
  o.threads = opt.local_threads;
  o.prefetch = 4;
  offload::RemoteSchedule schedule(opt.offload_ratio);  // on_step may change its ratio
  o.schedule = &schedule;
  o.client.comm = opt.service;
  o.client.credits = opt.credits;
  o.client.timeout = std::chrono::duration<double>(opt.worker_timeout_s);
  o.client.backoff = std::chrono::duration<double>(opt.worker_backoff_s);
  for (int w = 0; w < opt.workers; ++w) o.client.worker_ranks.push_back(w + 1);
  data::BatchLoader loader(std::move(o));

  PipelineRun run;
  if (opt.duration_s <= 0) run.steps.reserve(static_cast<std::size_t>(opt.steps));
  // The origin of end_s: the run's start until the last warm-up step ends, then that end.
  Clock::time_point start = Clock::now();
  std::uint64_t bytes_at_start = 0;
  std::size_t samples = 0;
  if (opt.warmup_steps == 0) bytes_at_start = loader.stats().client.payload_bytes;
  for (std::size_t step = 0;; ++step) {
    const bool measured = step >= static_cast<std::size_t>(opt.warmup_steps);
    if (measured) {
      const std::size_t done = step - static_cast<std::size_t>(opt.warmup_steps);
      if (opt.duration_s > 0 ? !run.steps.empty() && run.steps.back().end_s >= opt.duration_s
                             : done >= static_cast<std::size_t>(opt.steps)) {
        break;
      }
    }
    StepTiming timing;
    const auto t0 = Clock::now();
    const data::Batch& batch = loader.next();
    const auto t1 = Clock::now();
    timing.samples = batch.samples.size();
    if (opt.gpu_step_ms > 0) simulated_gpu_step(opt.gpu_step_ms);
    const auto t2 = Clock::now();
    timing.wait_s = seconds_between(t0, t1);
    timing.compute_s = seconds_between(t1, t2);
    if (step + 1 == static_cast<std::size_t>(opt.warmup_steps)) {
      start = t2;  // the measurement starts when the last warm-up step ends
      bytes_at_start = loader.stats().client.payload_bytes;
    }
    timing.end_s = seconds_between(start, t2);
    if (measured) {
      run.steps.push_back(timing);
      samples += timing.samples;
    }
    if (opt.on_step) opt.on_step(step, loader, timing);
  }
  run.seconds = run.steps.empty() ? 0 : run.steps.back().end_s;
  run.stats = loader.stats();
  if (run.seconds > 0) {
    run.samples_per_s = static_cast<double>(samples) / run.seconds;
    run.payload_bytes_per_s =
        static_cast<double>(run.stats.client.payload_bytes - bytes_at_start) / run.seconds;
  }
  loader.finish();
  return run;
}

}  // namespace

void PipelineSettings::add_pipeline_options(boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  desc.add_options()("data-dir", po::value(&data_dir)->default_value(data_dir),
                     "dataset directory")("batch", po::value(&batch)->default_value(batch),
                                          "samples per step")(
      "warmup", po::value(&warmup)->default_value(warmup), "unmeasured first steps")(
      "gpu-step-ms", po::value(&gpu_step_ms)->default_value(gpu_step_ms),
      "length of the SIMULATED GPU step (a sleep, not real compute)")(
      "resolution", po::value(&resolution)->default_value(resolution),
      "output size of the random resized crop (32 = CIFAR's own; 64 or more upscales, as "
      "ImageNet-style training does)")("local-threads",
                                       po::value(&local_threads)->default_value(local_threads),
                                       "trainer preprocessing threads")(
      "worker-threads", po::value(&worker_threads)->default_value(worker_threads),
      "preprocessing threads per worker rank")(
      "credits", po::value(&credits)->default_value(credits),
      "requests in flight per worker (data.worker_credits)")(
      "send-buffers", po::value(&send_buffers)->default_value(send_buffers),
      "batches a worker holds while sending (data.worker_send_buffers)");
}

void PipelineSettings::add_image_options(boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  desc.add_options()(
      "images", po::value(&images)->default_value(images),
      "image folder root (root/train/<class>/<file>.jpg|png, e.g. made by conflux-bench "
      "make-images --size 200-500): read and decode every sample from its file, random resized "
      "crop to --crop + flip + normalise, instead of CIFAR-10 in memory with the heavy "
      "augmentation at --resolution")("crop", po::value(&crop)->default_value(crop),
                                      "output side of the random resized crop with --images");
}

PipelineData pipeline_data(const PipelineSettings& settings) {
  PipelineData d;
  if (settings.images.empty()) {
    d.source = std::make_unique<data::InMemorySource>(
        data::load_dataset("cifar10", settings.data_dir).train);
    d.transform = std::make_unique<data::SampleTransform>(heavy_cifar_pipeline(settings.resolution),
                                                          d.source->info().shape);
    d.description = fmt::format("CIFAR-10 heavy augmentation at {}x{}", settings.resolution,
                                settings.resolution);
    return d;
  }
  CONFLUX_REQUIRE(settings.crop >= 1, "--crop {} must be at least 1", settings.crop);
  d.source = std::make_unique<data::ImageFolderSource>(settings.images, "train", 3);
  data::TransformOptions o;
  o.resized_crop = settings.crop;
  o.hflip = true;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  d.transform = std::make_unique<data::SampleTransform>(o, data::ImageShape{3, 0, 0});
  d.description = fmt::format(
      "image folder {} ({} files, read + decode + random resized crop {} + flip + "
      "normalise)",
      settings.images, d.source->size(), settings.crop);
  return d;
}

PipelineRunOptions PipelineSettings::run_options(const comm::Communicator& service, int workers,
                                                 const data::SampleSource& dataset,
                                                 const data::SampleTransform& transform) const {
  PipelineRunOptions o;
  o.service = &service;
  o.workers = workers;
  o.dataset = &dataset;
  o.transform = &transform;
  o.batch = batch;
  o.warmup_steps = warmup;
  o.gpu_step_ms = gpu_step_ms;
  o.local_threads = local_threads;
  o.worker_threads = worker_threads;
  o.credits = credits;
  o.send_buffers = send_buffers;
  return o;
}

void simulated_gpu_step(double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

PipelineRun run_pipeline(const PipelineRunOptions& options) {
  check(options);
  const int rank = options.service->rank();
  PipelineRun run;
  if (rank == 0) {
    run = train(options);
  } else if (rank <= options.workers) {
    serve(options, rank - 1);
  }
  // Ranks sitting out wait here, so that the next run starts on every rank together.
  options.service->barrier();
  return run;
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

std::vector<double> parse_ratio_list(const std::string& text, const std::string& option) {
  std::vector<double> ratios;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    try {
      ratios.push_back(std::stod(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    CONFLUX_REQUIRE(used > 0 && used == item.size(), "{}: '{}' is not a number", option, item);
    CONFLUX_REQUIRE(ratios.back() >= 0 && ratios.back() <= 1, "{}: {} is not in [0, 1]", option,
                    item);
  }
  CONFLUX_REQUIRE(!ratios.empty(), "{}: give at least one ratio", option);
  return ratios;
}

}  // namespace conflux::bench
