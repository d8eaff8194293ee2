#include "conflux/train/train_job.hpp"

#include <cblas.h>

#include <fmt/ranges.h>

#include <unistd.h>

#include <optional>
#include <vector>

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
#include "conflux/train/run_dir.hpp"
#include "conflux/train/run_files.hpp"
#include "conflux/train/run_recorder.hpp"
#include "conflux/train/tensorboard_recorder.hpp"
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

// What a worker rank serves with.
struct WorkerSetup {
  const Config& config;
  const comm::RoleLayout& layout;
  const comm::Communicator& service;  // the data service's communicator
  const data::SampleSource& train;
  const data::SampleTransform& transform;
  const Logger& log;
  telemetry::Timeline& timeline;
  const ckpt::StopSignals* signals;  // null: none watched
};

// Serves batches to the trainers until each has said goodbye, then reports what it did.
void serve_batches(const WorkerSetup& w) {
  const Config& config = w.config;
  data::BatchServerOptions o;
  o.comm = &w.service;
  for (int t = 0; t < w.layout.trainers; ++t) {
    o.trainer_ranks.push_back(w.layout.trainer_world_rank(t));
  }
  o.worker = w.layout.role_rank;
  o.source = &w.train;
  o.transform = &w.transform;
  o.decoding = sample_decoding(config, &w.log);
  o.cache_bytes = read_ahead_bytes(config);
  o.threads = config.cluster().worker_threads;
  o.seed = config.run().seed;
  o.global_batch = static_cast<std::size_t>(config.train().batch_size);
  o.send_buffers = config.data().worker_send_buffers;
  o.drain_timeout = std::chrono::duration<double>(config.cluster().peer_timeout_s);
  o.fault = worker_fault(config.fault(), w.layout.role_rank);
  if (w.signals != nullptr) o.stop_signal = [signals = w.signals] { return signals->received(); };
  o.log = &w.log;
  o.timeline = &w.timeline;
  const data::BatchServerStats stats = data::BatchServer(std::move(o)).serve();
  log_memory(w.log, fmt::format("worker {}", w.layout.role_rank), stats.fetcher, stats.skipped,
             w.train.resident_bytes());
  w.log.info(
      "worker {}: served {} batches ({} samples; per trainer {}), cancelled {}, refused {}; "
      "building {:.0f} "
      "%, CPU {:.0f} % of {:.1f} s; at most {:.1f} MiB in flight (bound: {} send buffers)",
      w.layout.role_rank, stats.batches, stats.samples, fmt::join(stats.per_trainer, "/"),
      stats.cancelled, stats.refused,
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

// This rank's place in the job, which every phase of run_train_job reads.
struct JobRank {
  const Config& config;
  const comm::Communicator& world;
  const Logger& log;
  const comm::RoleSplit& roles;
  bool is_trainer() const noexcept { return roles.layout.role == comm::Role::kTrainer; }
  bool is_root() const noexcept { return world.rank() == 0; }
};

// Checks on every rank that the rank count fits the config; returns the worker count.
int agree_on_workers(const Config& config, const comm::Communicator& world) {
  int workers = 0;
  comm::run_agreed(world, "checking the rank count", [&] {
    workers = config.workers_for(world.size());
    CONFLUX_REQUIRE(config.fault().worker < workers,
                    "{}: fault.worker = {} names a worker the job does not have ({} worker "
                    "rank(s))",
                    config.where("fault.worker"), config.fault().worker, workers);
  });
  return workers;
}

// [limits] for this rank's role, in force while the result lives; none when they do not apply.
std::optional<ResourceLimits> function_limits(const JobRank& job) {
  const LimitsSection& l = job.config.limits();
  if (!limits_apply(l, job.is_trainer())) return std::nullopt;
  return std::optional<ResourceLimits>(std::in_place, FunctionSize{l.memory_mb, l.mb_per_vcpu},
                                       std::chrono::duration<double>(l.cpu_period_ms / 1000));
}

std::string host_name() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  return host;
}

void log_rank(const JobRank& job, const std::optional<ResourceLimits>& limits) {
  const comm::RoleLayout& layout = job.roles.layout;
  job.log.info("{} {}/{} (host {}, pid {}, node-local rank {}/{}){}", comm::role_name(layout.role),
               layout.role_rank, job.is_trainer() ? layout.trainers : layout.workers, host_name(),
               ::getpid(), layout.node_local_rank, layout.node_local_size,
               limits ? fmt::format(", Lambda-like limit {}", limits->size().describe()) : "");
}

// train.device: the trainers agree on the CPU or a GPU each (workers compute on the CPU).
DeviceChoice agree_on_device(const JobRank& job) {
  DeviceChoice device;
  comm::run_agreed(job.world, "choosing the trainers' device", [&] {
    if (job.is_trainer()) device = choose_device(job.config, job.roles.role_comm, &job.log);
  });
  return device;
}

// The checkpoint the run continues from: its path on every rank, its contents where rank 0
// has read them already; and rank 0's locks on the run's directories, held for the job's life.
struct ResumePoint {
  std::optional<ckpt::FoundCheckpoint> found;  // rank 0
  std::string path;                            // empty: a fresh start
  std::vector<DirectoryLock> locks;            // rank 0
};

// Who holds the run directory, for the error of a job refused it.
std::string lock_holder(const JobRank& job) {
  return fmt::format("pid {} on host {}, rank 0 of {} ranks, launched {}", ::getpid(), host_name(),
                     job.world.size(), job.config.sources().launch_time);
}

// Rank 0 locks and creates the run directory and, for checkpoint.resume, picks the checkpoint
// to continue from; every rank learns its path.
ResumePoint prepare_run(const JobRank& job) {
  ResumePoint resume;
  comm::run_agreed(job.world, "preparing the run directory and finding the checkpoint", [&] {
    if (!job.is_root()) return;
    resume.locks = lock_run_dirs(job.config, lock_holder(job), job.log);
    prepare_run_dir(job.config);
    resume.found = find_resume_checkpoint(job.config, job.log);
  });
  resume.path = job.world.broadcast(resume.found ? resume.found->path.string() : "", 0);
  // Once rank 0 holds the run directory, every rank keeps its own log in it (appended to
  // by a resumed run), so that a worker's warnings are not lost in a merged stdout.
  comm::run_agreed(job.world, "opening the rank's log file", [&] {
    job.log.tee_to(job.config.run().dir / run_files::rank_log(job.world.rank()));
  });
  return resume;
}

telemetry::TimelineOptions timeline_options(const JobRank& job) {
  const comm::RoleLayout& layout = job.roles.layout;
  return {.enabled = job.config.profile().timeline,
          .process_name = fmt::format("{} {} (rank {})", comm::role_name(layout.role),
                                      layout.role_rank, job.world.rank()),
          .max_events = static_cast<std::size_t>(job.config.profile().timeline_max_events)};
}

DataServiceLink service_link(const comm::Communicator& service, const comm::RoleLayout& layout) {
  DataServiceLink link{&service, {}};
  for (int w = 0; w < layout.workers; ++w) link.worker_ranks.push_back(layout.worker_world_rank(w));
  return link;
}

// Continues `trainer` from the resume point, when there is one.
void resume_trainer(const JobRank& job, Trainer& trainer, ResumePoint& resume) {
  if (resume.path.empty()) return;
  // Every trainer reads the file itself: the checkpoint directory is shared.
  const ckpt::TrainingState state =
      resume.found ? std::move(resume.found->state) : ckpt::read_checkpoint(resume.path);
  trainer.restore(state, resume.path);  // the model's shape first: the clearest error
  check_resume_compatible(job.config, state, resume.path);
  if (job.is_root()) {
    job.log.info(
        "resuming from {}: epoch {} step {} (global step {}; written by {} trainer(s) "
        "and {} worker(s))",
        resume.path, state.epoch, state.step, state.global_step, state.trainers, state.workers);
  }
}

// The dataset's files and their SHA-256, as read on this rank.
comm::NamedValues identity_of(const data::SourceSplits& data) {
  comm::NamedValues values;
  for (const auto* split : {data.train.get(), data.test.get()}) {
    const char* part = split == data.train.get() ? "training" : "test";
    values.emplace_back(fmt::format("the {} split's dataset", part), split->info().name);
    values.emplace_back(fmt::format("the {} split's size", part), std::to_string(split->size()));
    for (const auto& file : split->info().sources) {
      values.emplace_back(fmt::format("the SHA-256 of {} ({} split)", file.name, part),
                          file.sha256);
    }
  }
  return values;
}

void log_dataset(const JobRank& job, const data::SourceSplits& data) {
  if (!job.is_root()) return;
  const data::SourceInfo& info = data.train->info();
  const std::string geometry =
      info.format == data::SampleFormat::kPixels
          ? fmt::format("{}x{}x{}", info.shape.channels, info.shape.height, info.shape.width)
          : fmt::format("any size, decoded to {} channel(s)", info.shape.channels);
  job.log.info("dataset {}: {} training / {} test samples of {}, {} classes; {}",
               job.config.data().dataset, data.train->size(), data.test->size(), geometry,
               info.num_classes,
               info.streamed ? fmt::format("streamed, index {:.1f} MiB per rank",
                                           static_cast<double>(data.train->resident_bytes() +
                                                               data.test->resident_bytes()) /
                                               (1 << 20))
                             : "held in memory");
}

// profile.timeline: every rank streams its events to <run.dir>/timeline/rank-N.json while
// the run goes (a collective: the ranks' clocks are aligned first).
void start_timeline_stream(const JobRank& job, telemetry::Timeline& timeline) {
  const Config& config = job.config;
  if (!config.profile().timeline) return;
  comm::run_agreed(job.world, "starting the timeline stream", [&] {
    timeline.start_stream(job.world,
                          config.run().dir / run_files::timeline_stream(job.world.rank()),
                          config.profile().timeline_flush_s);
  });
}

// The stream's last events; a failed stream costs a warning, not the run's results.
void finish_timeline_stream(const JobRank& job, telemetry::Timeline& timeline) {
  try {
    timeline.stop_stream();
  } catch (const Error& e) {
    job.log.warn("the timeline stream stopped early: {}", e.describe());
  }
}

// Every rank learns whether training stopped on a signal, so all exit alike; the timeline is
// merged first (a collective of every rank).
ExitCode agreed_exit(const JobRank& job, telemetry::Timeline& timeline, bool stopped) {
  const Config& config = job.config;
  finish_timeline_stream(job, timeline);
  if (config.profile().timeline) {
    const std::size_t events =
        timeline.write_merged(job.world, config.run().dir / run_files::kTimeline);
    if (job.is_root()) {
      job.log.info("timeline: {} events in {}", events,
                   (config.run().dir / run_files::kTimeline).string());
    }
  }
  return job.world.allreduce_max(stopped ? static_cast<int>(ExitCode::kRequeue) : 0) != 0
             ? ExitCode::kRequeue
             : ExitCode::kSuccess;
}

// A worker stopped answering, so it would never join the collective exit: the trainers write
// their part of the timeline among themselves, and the caller ends the job (MPI_Abort with the
// exit code), since the results are published and nothing more is owed to anyone.
JobEnd leave_lost_workers(const JobRank& job, telemetry::Timeline& timeline,
                          const TrainSummary& summary) {
  const Config& config = job.config;
  const std::filesystem::path path = config.run().dir / run_files::kTimeline;
  finish_timeline_stream(job, timeline);
  if (config.profile().timeline) timeline.write_merged(job.roles.role_comm, path);
  const ExitCode code = summary.stopped ? ExitCode::kRequeue : ExitCode::kSuccess;
  if (job.is_root()) {
    job.log.warn(
        "{} worker(s) stopped answering; the results are complete{}, so the job ends without "
        "waiting for them (MPI_Abort with exit code {}){}",
        summary.lost_workers, summary.stopped ? " up to the checkpoint" : "",
        static_cast<int>(code),
        config.profile().timeline ? "; the timeline holds the trainers" : "");
  }
  return {code, true};
}

// Trains with the job's callbacks, reports, and exits with the other ranks (the callbacks
// live until every rank has agreed).
JobEnd train_and_exit(const JobRank& job, Trainer& trainer, const std::string& resume_path,
                      telemetry::Timeline& timeline, const ckpt::StopSignals* signals) {
  const Config& config = job.config;
  ProgressPrinter progress(job.log);
  std::optional<RunRecorder> recorder;
  std::optional<TensorBoardRecorder> tensorboard;
  Checkpointer checkpointer(
      CheckpointerOptions{config, job.roles.role_comm, signals, &job.log, resume_path, &timeline});
  // The checkpointer goes first: its on_train_end makes the final checkpoint durable before
  // the recorder writes model.h5.
  std::vector<TrainingCallback*> callbacks{&checkpointer};
  std::optional<PipelineMonitor> monitor;
  if (config.profile().enabled) {
    monitor.emplace(
        PipelineMonitorOptions{config, job.roles.layout.role_rank, &job.log, &timeline});
    callbacks.push_back(&*monitor);
  }
  if (job.is_root()) {
    recorder.emplace(config);
    callbacks.insert(callbacks.end(), {&progress, &*recorder});
    if (config.profile().tensorboard) callbacks.push_back(&tensorboard.emplace(config));
  }
  const TrainSummary summary = trainer.run(callbacks);
  if (job.is_root()) {
    report_checkpoints(checkpointer.stats(), job.log);
    if (!summary.stopped) fmt::print("model digest: {}\n", summary.digest);
    job.log.info("results in {}", config.run().dir.string());
  }
  if (summary.lost_workers > 0) return leave_lost_workers(job, timeline, summary);
  return {agreed_exit(job, timeline, summary.stopped), false};
}

}  // namespace

JobEnd run_train_job(const Config& config, const comm::Communicator& world, const Logger& log,
                     const ckpt::StopSignals* signals) {
  const int workers = agree_on_workers(config, world);
  const comm::RoleSplit roles = comm::split_roles(world, config.cluster().trainers, workers);
  const JobRank job{config, world, log, roles};
  openblas_set_num_threads(config.cluster().blas_threads);
  const std::optional<ResourceLimits> limits = function_limits(job);
  ResumePoint resume = prepare_run(job);
  log_rank(job, limits);
  const DeviceChoice device = agree_on_device(job);
  telemetry::Timeline timeline(timeline_options(job));
  timeline.name_thread("main");
  start_timeline_stream(job, timeline);
  if (job.is_root()) {
    log.info("run '{}': {} trainer(s), {} worker(s); run directory {}", config.run().name,
             roles.layout.trainers, roles.layout.workers, config.run().dir.string());
  }

  // The data service talks on its own communicator, so its tags never meet anyone else's.
  const comm::Communicator service = world.split(0, world.rank());
  data::SourceSplits data;
  std::optional<Trainer> trainer;
  std::optional<data::SampleTransform> worker_transform;
  comm::NamedValues data_identity;
  comm::run_agreed(world, "loading the data and building the model", [&] {
    data = open_training_data(config);
    data_identity = identity_of(data);
    if (job.is_trainer()) {
      trainer.emplace(TrainerSetup{config, roles.role_comm, data,
                                   service_link(service, roles.layout), &log, &timeline, device});
      resume_trainer(job, *trainer, resume);
    } else {
      worker_transform.emplace(make_transform(config, *data.train));
      data.test.reset();  // workers only build training batches
    }
  });
  // A rank whose data.dir holds other files (Fashion-MNIST under mnist/) would train silently.
  comm::agree_with_root(world, "training data", data_identity,
                        "every rank must read the same dataset files (check data.dir, "
                        "data.hdf5_file or $CONFLUX_DATA on that rank's node)");
  log_dataset(job, data);
  if (job.is_trainer()) return train_and_exit(job, *trainer, resume.path, timeline, signals);
  serve_batches(
      {config, roles.layout, service, *data.train, *worker_transform, log, timeline, signals});
  return {agreed_exit(job, timeline, false), false};
}

}  // namespace conflux::train
