#pragma once
/// @file pipeline_harness.hpp
/// The data-service measurement shared by the scenarios: 1 trainer (rank 0 of a service
/// communicator) draws batches from a BatchLoader and runs a SIMULATED GPU STEP (a sleep that
/// leaves its core free, as a real GPU step would) after each; worker ranks serve a share of
/// the batches. Not real training: it measures how fast the input pipeline feeds a trainer.

#include <boost/program_options.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/data/io/in_memory_split.hpp"
#include "conflux/data/service/batch_loader.hpp"
#include "conflux/data/service/batch_server.hpp"
#include "conflux/data/transform/transforms.hpp"

namespace conflux::bench {

/// Timing of one trainer step.
struct StepTiming {
  double wait_s = 0;     ///< time in loader.next(), waiting for the batch
  double compute_s = 0;  ///< time in the SIMULATED GPU STEP (the sleep)
  /// Measured steps: seconds since the measurement start (the end of the last warm-up step).
  /// Warm-up steps, which happen before that is known: seconds since the first step began.
  double end_s = 0;
  std::size_t samples = 0;  ///< samples in the batch
};

/// One run of the pipeline; see run_pipeline().
struct PipelineRunOptions {
  const comm::Communicator* service = nullptr;  ///< rank 0 trains, ranks 1.. may serve
  /// How many of ranks 1..size-1 serve (ranks 1..workers); the rest sit out this run but
  /// still join the harness's closing barrier.
  int workers = 0;
  const data::SampleSource* dataset = nullptr;       ///< training split
  const data::SampleTransform* transform = nullptr;  ///< training transform
  int batch = 128;                                   ///< samples per step
  int warmup_steps = 5;                              ///< unmeasured first steps
  int steps = 50;                                    ///< measured steps
  double duration_s = 0;         ///< if > 0, measure until this many seconds instead of `steps`
  double gpu_step_ms = 2;        ///< length of the SIMULATED GPU STEP (a sleep)
  double offload_ratio = 0;      ///< initial share of batches requested from workers
  int local_threads = 1;         ///< the trainer's preprocessing threads
  int worker_threads = 1;        ///< preprocessing threads per worker rank
  int credits = 2;               ///< requests in flight per worker (data.worker_credits)
  int send_buffers = 2;          ///< batches a worker holds while sending
  double worker_timeout_s = 30;  ///< deadline of a request (data.worker_timeout_s)
  double worker_backoff_s = 10;  ///< pause for a worker that missed one (data.worker_backoff_s)
  data::WorkerFault fault;       ///< how worker `fault_worker` misbehaves
  int fault_worker = -1;         ///< worker index (0-based) that gets `fault`; -1: none
  /// Called on the trainer after every step, warm-up included (`step` counts from 0 at the
  /// first warm-up step); may change loader.set_offload_ratio().
  std::function<void(std::size_t step, data::BatchLoader& loader, const StepTiming& timing)>
      on_step;
};

/// What the trainer measured (workers get an empty one).
struct PipelineRun {
  double samples_per_s = 0;        ///< measured samples / measured seconds
  double seconds = 0;              ///< length of the measured part
  double payload_bytes_per_s = 0;  ///< image + label bytes from workers per measured second
  data::LoaderStats stats;         ///< the loader's counters at the end (warm-up included)
  std::vector<StepTiming> steps;   ///< measured steps only
};

/// The settings the data-service scenarios share (scaling, data-service, offload), with their
/// command-line options. A scenario's options derive from it and may change the defaults.
struct PipelineSettings {
  std::string data_dir = environment_data_dir();  // as conflux: $CONFLUX_DATA, else per-user
  int batch = 128;
  int warmup = 5;          ///< unmeasured first steps
  double gpu_step_ms = 2;  ///< the SIMULATED GPU STEP
  int resolution = 32;     ///< output size of the random resized crop
  int local_threads = 1;   ///< the trainer's preprocessing threads
  int worker_threads = 1;  ///< preprocessing threads per worker rank
  int credits = 4;         ///< requests in flight per worker
  int send_buffers = 3;    ///< batches a worker holds while sending

  /// Adds --data-dir, --batch, --warmup, --gpu-step-ms, --resolution, --local-threads,
  /// --worker-threads, --credits and --send-buffers to `desc`, defaulting to the values held.
  void add_pipeline_options(boost::program_options::options_description& desc);
  /// --images DIR: an image folder instead of CIFAR-10 in memory (only the scenarios that call
  /// add_image_options(); see pipeline_data()).
  std::string images{};
  int crop = 224;  ///< --crop: output side of the random resized crop for --images

  /// Adds --images and --crop to `desc`.
  void add_image_options(boost::program_options::options_description& desc);
  /// A run with these settings: `workers` of the service's ranks serve `dataset` through
  /// `transform` (ratio, steps and hooks are the caller's).
  PipelineRunOptions run_options(const comm::Communicator& service, int workers,
                                 const data::SampleSource& dataset,
                                 const data::SampleTransform& transform) const;
};

/// The training data of a data-service scenario and its transform.
struct PipelineData {
  std::unique_ptr<data::SampleSource> source;
  std::unique_ptr<data::SampleTransform> transform;
  std::string description;  ///< for the printed header, e.g. "CIFAR-10 heavy augmentation at 64x64"
};

/// settings.images set: data::ImageFolderSource over its "train" split (JPEG/PNG files read and
/// decoded per sample, as conflux train reads an image folder) with the ImageNet-style training
/// transform: random resized crop to settings.crop, flip, normalisation (images of any size).
/// Otherwise CIFAR-10's training split in memory with heavy_cifar_pipeline(settings.resolution).
PipelineData pipeline_data(const PipelineSettings& settings);

/// Runs the pipeline once; collective over *options.service. InputError for options that do
/// not fit the communicator (too few ranks for `workers`, a bad fault_worker, no steps).
PipelineRun run_pipeline(const PipelineRunOptions& options);

/// The SIMULATED GPU STEP: sleeps `ms` milliseconds, leaving the core free as a GPU step
/// would. Not a real compute step.
void simulated_gpu_step(double ms);

/// The heavy CIFAR-10 augmentation (SimCLR-like: random resized crop to `resolution`, flip,
/// rotation, colour jitter, blur, cutout, normalisation) the data-service scenarios use.
data::TransformOptions heavy_cifar_pipeline(int resolution);

/// Normalisation alone: the cheapest pipeline, for transfer measurements.
data::TransformOptions normalise_only();

/// Parses a comma-separated list of ratios in [0, 1]; InputError naming `option` otherwise.
std::vector<double> parse_ratio_list(const std::string& text, const std::string& option);

}  // namespace conflux::bench
