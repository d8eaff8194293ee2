#include "conflux/train/train_job.hpp"

#include <cblas.h>

#include <fmt/ranges.h>

#include <unistd.h>

#include <optional>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/roles.hpp"
#include "conflux/core/resource_limits.hpp"
#include "conflux/data/service/batch_server.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/checkpointer.hpp"
#include "conflux/train/device_choice.hpp"
#include "conflux/train/pipeline_monitor.hpp"
#include "conflux/train/progress_printer.hpp"
#include "conflux/train/resume.hpp"
#include "conflux/train/run_recorder.hpp"
#include "conflux/train/trainer.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

// The fault injection of [fault] for worker `worker` (none unless it is fault.worker).
data::WorkerFault worker_fault(const FaultSection& f, int worker) {
  data::WorkerFault fault;
  if (worker != f.worker) return fault;
  fault.mode = f.mode == "stop"   ? data::WorkerFault::Mode::kStop
               : f.mode == "slow" ? data::WorkerFault::Mode::kSlow
                                  : data::WorkerFault::Mode::kDelay;
  fault.delay = std::chrono::duration<double>(f.delay_s);
  fault.factor = f.factor;
  fault.after = static_cast<std::uint64_t>(f.after);
  return fault;
}

// Serves batches to the trainers until each has said goodbye, then reports what it did.
void serve_batches(const Config& config, const comm::RoleLayout& layout,
                   const comm::Communicator& service, const data::Dataset& train,
                   const data::SampleTransform& transform, const Logger& log,
                   telemetry::Timeline& timeline) {
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
  o.fault = worker_fault(config.fault(), layout.role_rank);
  o.log = &log;
  o.timeline = &timeline;
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

// Whether the Lambda-like function size of [limits] applies to this rank's role.
bool limits_apply(const LimitsSection& limits, bool is_trainer) {
  return limits.memory_mb > 0 &&
         (limits.ranks == "all" || (limits.ranks == "trainers") == is_trainer);
}

void report_checkpoints(const CheckpointerStats& s, const Logger& log) {
  if (s.taken == 0) return;
  const double mib = static_cast<double>(s.persist.bytes) / (1 << 20);
  log.info(
      "checkpoints: {} taken, stall {:.1f} ms mean / {:.1f} ms max; {} written, {:.1f} MiB in "
      "{:.2f} s ({:.0f} MiB/s); per-step agreement {:.1f} ms in all",
      s.taken, 1e3 * s.stall_seconds / static_cast<double>(s.taken), 1e3 * s.max_stall_seconds,
      s.persist.written, mib, s.persist.write_seconds,
      s.persist.write_seconds > 0 ? mib / s.persist.write_seconds : 0.0, 1e3 * s.agree_seconds);
}

}  // namespace

ExitCode run_train_job(const Config& config, const comm::Communicator& world, const Logger& log,
                       const ckpt::StopSignals* signals) {
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
  std::optional<ResourceLimits> limits;
  if (limits_apply(config.limits(), is_trainer)) {
    limits.emplace(FunctionSize{config.limits().memory_mb, config.limits().mb_per_vcpu},
                   std::chrono::duration<double>(config.limits().cpu_period_ms / 1000));
  }
  const bool is_root = world.rank() == 0;

  log.info("{} {}/{} (pid {}, node-local rank {}/{}){}", comm::role_name(layout.role),
           layout.role_rank, is_trainer ? layout.trainers : layout.workers, ::getpid(),
           layout.node_local_rank, layout.node_local_size,
           limits ? fmt::format(", Lambda-like limit {}", limits->size().describe()) : "");
  // train.device: the trainers agree on the CPU or a GPU each (workers compute on the CPU).
  DeviceChoice device;
  comm::run_agreed(world, [&] {
    if (is_trainer) device = choose_device(config, roles.role_comm, &log);
  });
  std::optional<ckpt::FoundCheckpoint> found;
  comm::run_agreed(world, [&] {
    if (!is_root) return;
    prepare_run_dir(config);
    found = find_resume_checkpoint(config, log);
  });
  const std::string resume_path = world.broadcast(found ? found->path.string() : "", 0);
  telemetry::Timeline timeline(telemetry::TimelineOptions{
      .enabled = config.profile().timeline,
      .process_name = fmt::format("{} {} (rank {})", comm::role_name(layout.role), layout.role_rank,
                                  world.rank()),
      .max_events = static_cast<std::size_t>(config.profile().timeline_max_events)});
  timeline.name_thread("main");
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
      trainer.emplace(TrainerSetup{config, roles.role_comm, data, link, &log, &timeline, device});
      if (!resume_path.empty()) {
        // Every trainer reads the file itself: the checkpoint directory is shared.
        const ckpt::TrainingState state =
            found ? std::move(found->state) : ckpt::read_checkpoint(resume_path);
        trainer->restore(state, resume_path);  // the model's shape first: the clearest error
        check_resume_compatible(config, state, resume_path);
        if (is_root) {
          log.info(
              "resuming from {}: epoch {} step {} (global step {}; written by {} trainer(s) "
              "and {} worker(s))",
              resume_path, state.epoch, state.step, state.global_step, state.trainers,
              state.workers);
        }
      }
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

  // Every rank learns whether training stopped on a signal, so all exit alike; the timeline
  // is merged first (a collective of every rank).
  const auto agreed_exit = [&](bool stopped) {
    if (config.profile().timeline) {
      const std::size_t events = timeline.write_merged(world, config.run().dir / "timeline.json");
      if (is_root) {
        log.info("timeline: {} events in {}", events,
                 (config.run().dir / "timeline.json").string());
      }
    }
    return world.allreduce_max(stopped ? static_cast<int>(ExitCode::kRequeue) : 0) != 0
               ? ExitCode::kRequeue
               : ExitCode::kSuccess;
  };
  if (!is_trainer) {
    serve_batches(config, layout, service, data.train, *worker_transform, log, timeline);
    return agreed_exit(false);
  }
  ProgressPrinter progress(log);
  std::optional<RunRecorder> recorder;
  Checkpointer checkpointer(
      CheckpointerOptions{config, roles.role_comm, signals, &log, resume_path, &timeline});
  // The checkpointer goes first: its on_train_end makes the final checkpoint durable before
  // the recorder writes model.h5.
  std::vector<TrainingCallback*> callbacks{&checkpointer};
  std::optional<PipelineMonitor> monitor;
  if (config.profile().enabled) {
    monitor.emplace(PipelineMonitorOptions{config, layout.role_rank, &log, &timeline});
    callbacks.push_back(&*monitor);
  }
  if (is_root) {
    recorder.emplace(config);
    callbacks.insert(callbacks.end(), {&progress, &*recorder});
  }
  const TrainSummary summary = trainer->run(callbacks);
  if (is_root) {
    report_checkpoints(checkpointer.stats(), log);
    if (!summary.stopped) fmt::print("model digest: {}\n", summary.digest);
    log.info("results in {}", config.run().dir.string());
  }
  return agreed_exit(summary.stopped);
}

}  // namespace conflux::train
