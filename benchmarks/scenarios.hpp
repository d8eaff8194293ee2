#pragma once
/// @file scenarios.hpp
/// The conflux-bench scenarios. Each parses its own options (Boost.Program_options) plus the
/// common --json/--plot (report.hpp), prints a human-readable report and returns an exit code;
/// main() starts MPI and dispatches.

#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"

namespace conflux::bench {

/// One named scenario of conflux-bench.
struct Scenario {
  const char* name;     ///< sub-command, e.g. "transforms"
  const char* summary;  ///< one line for `conflux-bench --help`
  int (*run)(const std::vector<std::string>& args, const comm::Communicator& world);
};

/// Cost per sample of every transform on a real dataset (single rank, single thread).
int run_transform_cost(const std::vector<std::string>& args, const comm::Communicator& world);

/// Images/s of random resized crop + flip + normalise (and resize + centre crop) on synthetic
/// images of varying size (single rank, single thread).
int run_transform_any_size(const std::vector<std::string>& args, const comm::Communicator& world);

/// Data-service throughput with a simulated GPU step, offload-ratio sweep and goodput versus
/// plain MPI send/recv (1 trainer + workers).
int run_data_service(const std::vector<std::string>& args, const comm::Communicator& world);

/// Training-time overhead, stall and persist throughput of checkpointing every N steps.
int run_checkpoint(const std::vector<std::string>& args, const comm::Communicator& world);

/// Data-service throughput against the number of worker ranks (simulated GPU step).
int run_scaling(const std::vector<std::string>& args, const comm::Communicator& world);

/// Gradient allreduce time and bandwidth for the models' parameter counts and a size sweep.
int run_grad_sync(const std::vector<std::string>& args, const comm::Communicator& world);

/// Raw TCP bandwidth between 2 ranks, with MPI_Send/MPI_Recv and the gradient allreduce
/// between the same ranks as fractions of it, measured in the same run.
int run_tcp_bandwidth(const std::vector<std::string>& args, const comm::Communicator& world);

/// docs/scaling.md's model from measured --json files: allreduce check and projection, data
/// service fan-in and credits, the design's first limits (1 rank, arithmetic only).
int run_scale_model(const std::vector<std::string>& args, const comm::Communicator& world);

/// End-to-end throughput of the real training job for a config.
int run_train(const std::vector<std::string>& args, const comm::Communicator& world);

/// Automatic offload ratio against fixed ratios (input-bound, compute-bound, drift), with a
/// SIMULATED GPU step (1 trainer + workers).
int run_offload(const std::vector<std::string>& args, const comm::Communicator& world);

/// Cost of the always-on step profiler and timeline against a run without them.
int run_profiler_overhead(const std::vector<std::string>& args, const comm::Communicator& world);

/// Speed of the exact planner on the full default space, and against exhaustive search.
int run_planner(const std::vector<std::string>& args, const comm::Communicator& world);

/// An ImageNet-style folder of JPEG/PNG files made from CIFAR-10 (upscaled), for tests and the
/// decode benchmark.
int run_make_images(const std::vector<std::string>& args, const comm::Communicator& world);

/// Single-thread JPEG decode speed: conflux's decode_image against a plain TurboJPEG loop.
int run_decode(const std::vector<std::string>& args, const comm::Communicator& world);

/// Training samples/s of read + decode + random resized crop + flip + normalise over an image
/// folder through data::BatchBuilder (single rank, 1 thread by default).
int run_image_pipeline(const std::vector<std::string>& args, const comm::Communicator& world);

/// A training step's time against the time of its SGEMM calls alone (the GEMM-bound limit),
/// with a breakdown by layer and phase (1 rank, synthetic batch).
int run_gemm_limit(const std::vector<std::string>& args, const comm::Communicator& world);

/// One trainer's training steps on synthetic 8-bit batches already in memory, with the
/// trainer's own model and ComputeBackend (CPU or GPU, as train.device chooses): samples/s,
/// step time, peak device memory (1 rank).
int run_trainer_step(const std::vector<std::string>& args, const comm::Communicator& world);

}  // namespace conflux::bench
