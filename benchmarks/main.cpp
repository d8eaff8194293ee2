// conflux-bench: benchmark scenarios. Starts MPI, dispatches to a scenario, maps errors to
// the documented exit codes (0 ok, 2 bad input, 3 runtime failure).

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/comm/mpi.hpp"
#include "conflux/core/log.hpp"
#include "scenarios.hpp"

using namespace conflux;

namespace {

const bench::Scenario kScenarios[] = {
    {"profiler",
     "training with the step profiler and timeline vs without: overhead (mpirun -np T, all "
     "trainers)",
     bench::run_profiler_overhead},
    {"offload",
     "auto offload ratio vs fixed ratios: input-bound, compute-bound and drift, SIMULATED GPU "
     "step (mpirun -np N+1)",
     bench::run_offload},
    {"transforms", "cost per sample of every transform on CIFAR-10 (1 rank, 1 thread)",
     bench::run_transform_cost},
    {"transforms-any-size",
     "images/s of random resized crop + flip + normalise on synthetic images of varying size "
     "(1 rank, 1 thread)",
     bench::run_transform_any_size},
    {"data-service",
     "1 trainer + workers: offload-ratio sweep with a SIMULATED GPU step, and data-plane "
     "goodput vs plain MPI send/recv (mpirun -np 2)",
     bench::run_data_service},
    {"checkpoint",
     "training with checkpoints every N steps vs none: overhead, stall, persist throughput "
     "(mpirun -np T, all trainers)",
     bench::run_checkpoint},
    {"scaling",
     "data-service samples/s against 0..N worker ranks, SIMULATED GPU step, best offload "
     "ratio per count (mpirun -np N+1)",
     bench::run_scaling},
    {"planner", "exact planner: full-space query time, against exhaustive search",
     bench::run_planner},
    {"grad-sync",
     "gradient allreduce time, algbw and busbw for the MNIST/CIFAR-10 models and a message-size "
     "sweep (mpirun -np N, all ranks)",
     bench::run_grad_sync},
    {"tcp",
     "raw TCP bandwidth between 2 ranks, and MPI_Send and gradient allreduce as fractions of "
     "it, in the same run (mpirun -np 2, e.g. on 2 hosts)",
     bench::run_tcp_bandwidth},
    {"scale-model",
     "docs/scaling.md's model from measured tcp, grad-sync and offload --json files: allreduce "
     "check and projection to 4096 ranks, data-service fan-in, first limits (1 rank)",
     bench::run_scale_model},
    {"train",
     "end-to-end training samples/s per epoch of the real training job for a config "
     "(mpirun -np trainers+workers)",
     bench::run_train},
    {"make-images",
     "write an ImageNet-style JPEG/PNG folder from CIFAR-10 upscaled to ImageNet-like sizes "
     "(a stand-in for ImageNet; deterministic)",
     bench::run_make_images},
    {"decode",
     "JPEG decode speed on one thread: conflux's decode_image vs a plain TurboJPEG loop "
     "(1 rank)",
     bench::run_decode},
    {"image-pipeline",
     "training samples/s from an image folder on one thread: read + decode + random resized "
     "crop 224 + flip + normalise through BatchBuilder (1 rank)",
     bench::run_image_pipeline},
    {"gemm-limit",
     "a training step against its SGEMM calls timed alone (the GEMM-bound limit), with a "
     "breakdown by layer and phase (1 rank, synthetic batch)",
     bench::run_gemm_limit},
    {"trainer-step",
     "one trainer's steps (the trainer's model and CPU or GPU backend, train.device) on "
     "synthetic 8-bit batches in memory: samples/s, step time, peak device memory (1 rank)",
     bench::run_trainer_step},
};

void print_usage() {
  fmt::print(
      "conflux-bench: benchmark scenarios\n\nUsage:\n  [mpirun -np N] conflux-bench "
      "SCENARIO [options]   (SCENARIO --help for its options)\n\nScenarios:\n");
  for (const auto& s : kScenarios) fmt::print("  {:<14} {}\n", s.name, s.summary);
  fmt::print(
      "\nEvery scenario also accepts:\n"
      "  --json FILE      write the results as JSON (scenario, parameters, tables with rows as "
      "objects, summary)\n"
      "  --plot FILE.png  draw the results with gnuplot (skipped, with a message, when gnuplot "
      "is not installed)\n");
}

}  // namespace

int main(int argc, char** argv) {
  comm::MpiEnvironment mpi(argc, argv);
  const Logger log(mpi.world_rank());
  try {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
      if (mpi.world_rank() == 0) print_usage();
      return argc < 2 ? static_cast<int>(ExitCode::kBadInput) : 0;
    }
    for (const auto& s : kScenarios) {
      if (s.name == std::string_view(argv[1])) {
        return s.run(std::vector<std::string>(argv + 2, argv + argc), comm::Communicator::world());
      }
    }
    CONFLUX_INPUT_ERROR("unknown scenario '{}' (see conflux-bench --help)", argv[1]);
  } catch (const Error& e) {
    log.error("{}", e.describe());
    mpi.abort(static_cast<int>(e.code()));
  } catch (const boost::program_options::error& e) {
    log.error("{} (see --help)", e.what());
    mpi.abort(static_cast<int>(ExitCode::kBadInput));
  }
}
