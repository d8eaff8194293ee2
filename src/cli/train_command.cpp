// `conflux train`: the training job, on every rank of an MPI job.

#include <cstdio>

#include "command.hpp"
#include "conflux/ckpt/stop_signals.hpp"
#include "conflux/train/train_job.hpp"
#include "mpi_command.hpp"

namespace conflux::cli {
namespace {

int run_train(const Invocation& inv) {
  const std::optional<ConfigArgs> config_args = parse_config_args(inv);
  if (!config_args) return 0;
  // Watched from before MPI starts until the process exits: a stop signal during start-up or
  // shutdown must not kill a rank (docs/checkpoints.md, "Stop signals").
  const ckpt::StopSignals signals(ckpt::StopSignals::AtEnd::kIgnore);
  return run_mpi_command(inv, *config_args, [&](const MpiJob& job) {
    const train::JobEnd end = train::run_train_job(job.config, job.world, job.log, &signals);
    // A worker that stopped answering would never join MPI_Finalize: end every rank now.
    if (end.leave_lost_workers) {
      std::fflush(nullptr);  // the digest line must not die in a buffer
      job.env.abort(static_cast<int>(end.code));
    }
    return static_cast<int>(end.code);
  });
}

}  // namespace

const Command& train_command() {
  static const Command command{
      .name = "train",
      .usage =
          "mpirun -np N conflux train --config FILE [--set KEY=VALUE]... "
          "[--resume auto|none|FILE]",
      .summary = "train the config's model (srun -n N works too)",
      .help =
          "Ranks 0..trainers-1 train ([cluster] trainers in the config); the others are "
          "preprocessing workers of the data service. The run writes its directory (run.dir): "
          "the resolved config, per-step and per-epoch metrics, checkpoints and model.h5 "
          "(docs/watching.md). SIGUSR1, SIGTERM or SIGINT make it checkpoint at the next step "
          "and exit 75; --resume auto continues from the newest valid checkpoint "
          "(docs/checkpoints.md). Launching on a cluster: docs/launching.md.",
      .run = run_train};
  return command;
}

}  // namespace conflux::cli
