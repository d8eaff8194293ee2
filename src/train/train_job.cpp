#include "conflux/train/train_job.hpp"

#include <cblas.h>

#include <fmt/ranges.h>

#include <optional>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/roles.hpp"
#include "conflux/data/batch_server.hpp"
#include "conflux/train/progress_printer.hpp"
#include "conflux/train/run_recorder.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

// Serves batches to the trainers until each has said goodbye, then reports what it did.
void serve_batches(const Config& config, const comm::RoleLayout& layout,
                   const comm::Communicator& service, const data::Dataset& train,
                   const data::SampleTransform& transform, const Logger& log) {
  data::BatchServerOptions o;
  o.comm = &service;
  for (int t = 0; t < layout.trainers; ++t) o.trainer_ranks.push_back(layout.trainer_world_rank(t));
  o.worker = layout.role_rank;
  o.dataset = &train;
  o.transform = &transform;
  o.threads = config.cluster().worker_threads;
  o.seed = config.run().seed;
  o.global_batch = static_cast<std::size_t>(config.train().batch_size);
  o.send_buffers = config.data().worker_send_buffers;
  o.drain_timeout = std::chrono::duration<double>(config.cluster().peer_timeout_s);
  const auto& f = config.fault();
  o.fault = data::worker_fault(layout.role_rank, f.worker, f.mode, f.delay_s, f.after);
  o.log = &log;
  const data::BatchServerStats stats = data::BatchServer(std::move(o)).serve();
  log.info(
      "worker {}: served {} batches ({} samples; per trainer {}), cancelled {}; building {:.0f} "
      "%, CPU {:.0f} % of {:.1f} s; at most {:.1f} MiB in flight (bound: {} send buffers)",
      layout.role_rank, stats.batches, stats.samples, fmt::join(stats.per_trainer, "/"),
      stats.cancelled,
      stats.total_seconds > 0 ? 100 * stats.build_seconds / stats.total_seconds : 0.0,
      stats.total_seconds > 0 ? 100 * stats.cpu_seconds / stats.total_seconds : 0.0,
      stats.total_seconds, static_cast<double>(stats.peak_bytes_in_flight) / (1 << 20),
      config.data().worker_send_buffers);
}

}  // namespace

void run_train_job(const Config& config, const comm::Communicator& world, const Logger& log) {
  int workers = 0;
  comm::run_agreed(world, [&] {
    workers = config.workers_for(world.size());
    CONFLUX_REQUIRE(config.fault().worker < workers,
                    "{}: fault.worker = {} names a worker the job does not have ({} worker "
                    "rank(s))",
                    config.where("fault.worker"), config.fault().worker, workers);
  });
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

  // The data service talks on its own communicator, so its tags never meet anyone else's.
  const comm::Communicator service = world.split(0, world.rank());
  DataServiceLink link{&service, {}};
  for (int w = 0; w < layout.workers; ++w) link.worker_ranks.push_back(layout.worker_world_rank(w));

  data::DatasetSplits data;
  std::optional<Trainer> trainer;
  std::optional<data::SampleTransform> worker_transform;
  comm::run_agreed(world, [&] {
    data = load_training_data(config);
    if (is_trainer) {
      trainer.emplace(TrainerSetup{config, roles.role_comm, data, link, &log});
    } else {
      worker_transform.emplace(make_transform(config, data.train));
      data.test = data::Dataset{};  // workers only build training batches
    }
  });
  if (is_root) {
    log.info("dataset {}: {} training / {} test samples of {}x{}x{}", config.data().dataset,
             data.train.size(), data.test.size(), data.train.shape.channels,
             data.train.shape.height, data.train.shape.width);
  }

  if (!is_trainer) {
    serve_batches(config, layout, service, data.train, *worker_transform, log);
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
  }
}

}  // namespace conflux::train
