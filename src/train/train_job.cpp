#include "conflux/train/train_job.hpp"

#include <cblas.h>

#include <optional>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/roles.hpp"
#include "conflux/train/progress_printer.hpp"
#include "conflux/train/run_recorder.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"

namespace conflux::train {

namespace {

constexpr int kShutdownTag = 901;

// Worker ranks have no data service yet (next issue): they wait, without using a core, until
// trainer 0 says the job is over.
void serve_until_shutdown(const comm::RoleLayout& layout, const comm::Communicator& world) {
  char byte = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  CONFLUX_MPI_CHECK(MPI_Irecv(&byte, 1, MPI_CHAR, layout.trainer_world_rank(0), kShutdownTag,
                              world.get(), &request));
  comm::wait_for(
      request, std::chrono::hours(24 * 365),
      fmt::format("the shutdown message from trainer rank {}", layout.trainer_world_rank(0)));
}

void release_workers(const comm::RoleLayout& layout, const comm::Communicator& world,
                     double timeout_s) {
  char byte = 1;
  for (int w = 0; w < layout.workers; ++w) {
    MPI_Request request = MPI_REQUEST_NULL;
    CONFLUX_MPI_CHECK(MPI_Isend(&byte, 1, MPI_CHAR, layout.worker_world_rank(w), kShutdownTag,
                                world.get(), &request));
    comm::wait_for(
        request, std::chrono::duration<double>(timeout_s),
        fmt::format("worker rank {} to take the shutdown message", layout.worker_world_rank(w)));
  }
}

}  // namespace

void run_train_job(const Config& config, const comm::Communicator& world, const Logger& log) {
  int workers = 0;
  comm::run_agreed(world, [&] { workers = config.workers_for(world.size()); });
  const comm::RoleSplit roles = comm::split_roles(world, config.cluster().trainers, workers);
  const comm::RoleLayout& layout = roles.layout;
  openblas_set_num_threads(config.cluster().blas_threads);
  const bool is_trainer = layout.role == comm::Role::kTrainer;
  const bool is_root = world.rank() == 0;

  log.info("{} {}/{} (node-local rank {}/{})", comm::role_name(layout.role), layout.role_rank,
           is_trainer ? layout.trainers : layout.workers, layout.node_local_rank,
           layout.node_local_size);
  comm::run_agreed(world, [&] {
    if (is_root) prepare_run_dir(config);
  });
  if (is_root) {
    log.info("run '{}': {} trainer(s), {} worker(s); run directory {}", config.run().name,
             layout.trainers, layout.workers, config.run().dir.string());
  }

  data::DatasetSplits data;
  std::optional<Trainer> trainer;
  comm::run_agreed(world, [&] {
    if (!is_trainer) return;
    data = load_training_data(config);
    trainer.emplace(TrainerSetup{config, roles.role_comm, data});
  });
  if (is_root) {
    log.info("dataset {}: {} training / {} test samples of {}x{}x{}", config.data().dataset,
             data.train.size(), data.test.size(), data.train.shape.channels,
             data.train.shape.height, data.train.shape.width);
  }

  if (!is_trainer) {
    serve_until_shutdown(layout, world);
    return;
  }
  ProgressPrinter progress(log);
  std::optional<RunRecorder> recorder;
  std::vector<TrainingCallback*> callbacks;
  if (is_root) {
    recorder.emplace(config);
    callbacks = {&progress, &*recorder};
  }
  const TrainSummary summary = trainer->run(callbacks);
  if (is_root) {
    fmt::print("model digest: {}\n", summary.digest);
    log.info("results in {}", config.run().dir.string());
    release_workers(layout, world, config.cluster().peer_timeout_s);
  }
}

}  // namespace conflux::train
