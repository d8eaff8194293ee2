#include "conflux/train/trainer.hpp"

#include "conflux/train/training_data.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/lr_schedule.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/offload/offload_settings.hpp"
#include "conflux/train/model_setup.hpp"
#include "conflux/train/run_recorder.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

// Says once how a CPU trainer's convolutions compute (train.conv_kernels): the digest
// depends on it.
void log_conv_kernels(const TrainerSetup& setup, const model::Model& model) {
  if (setup.log == nullptr || setup.trainers.rank() != 0) return;
  const auto& specs = model.specs();
  if (std::ranges::none_of(specs, [](const LayerSpec& s) { return s.type == "conv2d"; })) return;
  setup.log->info("conv2d layers compute with {} (train.conv_kernels)",
                  model.layer_options().conv == model::ConvKernels::kOnednn
                      ? "oneDNN's direct convolutions"
                      : "im2col + OpenBLAS SGEMM");
}

// Says once how the trainers' arithmetic runs (train.precision): the GPU's precision, or that
// the CPU computes in fp32 whatever the key says.
void log_precision(const TrainerSetup& setup, bool gpu) {
  if (setup.log == nullptr || setup.trainers.rank() != 0) return;
  const std::string& precision = setup.config.train().precision;
  if (gpu) {
    setup.log->info("GPU trainers compute in {} (train.precision)", precision);
  } else if (precision != "fp32") {
    setup.log->info("train.precision = {} applies to GPU trainers; CPU trainers compute in fp32",
                    precision);
  }
}

// The model on the device setup.device names (the CPU unless a GPU was chosen).
std::unique_ptr<ComputeBackend> backend_for(const TrainerSetup& setup, model::Model model,
                                            const data::SampleTransform& transform,
                                            std::chrono::duration<double> timeout,
                                            std::size_t max_batch) {
  const BackendOptions options{.config = &setup.config,
                               .trainers = &setup.trainers,
                               .timeout = timeout,
                               .num_classes = setup.data.train->info().num_classes,
                               .max_batch = max_batch,
                               .device = setup.device,
                               .transform = &transform};
  const bool gpu = setup.device.device == ComputeDevice::kGpu;
  log_precision(setup, gpu);
  if (!gpu) log_conv_kernels(setup, model);
  return make_backend(std::move(model), options);
}

}  // namespace

Trainer::Trainer(const TrainerSetup& setup)
    : config_(setup.config),
      trainers_(setup.trainers),
      data_(setup.data),
      service_(setup.service),
      log_(setup.log),
      timeline_(setup.timeline),
      timeout_(config_.cluster().peer_timeout_s),
      transform_(make_transform(config_, *data_.train)),
      backend_(backend_for(setup,
                           make_model(config_, transform_, data_.train->info().num_classes,
                                      trainers_.rank() == 0 ? log_ : nullptr),
                           transform_, timeout_, batch_split().max_batch(trainers_.rank()))) {
  progress_.offload.set_ratio(offload::offload_settings(config_, trainers_.rank()).start_ratio);
  if (config_.train().noise_scale) {
    if (trainers_.size() >= 2) {
      noise_.emplace(trainers_, timeout_);
    } else if (log_ != nullptr) {
      log_->warn(
          "train.noise_scale needs 2 or more trainers (it compares each trainer's "
          "gradient with the merged one): not measured");
    }
  }
}

Trainer::~Trainer() = default;

data::BatchSplit Trainer::batch_split() const {
  // comm.* other than the strategy are zero unless it is K-Reduce (checked with the config).
  return data::BatchSplit(static_cast<std::size_t>(config_.train().batch_size), trainers_.size(),
                          config_.comm().aggregators,
                          static_cast<std::size_t>(config_.comm().nonaggregator_batch_size));
}

void Trainer::apply_merged(std::size_t global_step) {
  // The rate of the step the merged gradient belongs to: a stale replica applies the same
  // updates as the others, one step later.
  backend_->apply(lr_schedule_->at(global_step));
}

void Trainer::drain_sync() {
  // A sync point: afterwards every replica has applied every merged update so far.
  if (backend_->drain()) apply_merged(progress_.position.global_step - 1);
}

std::unique_ptr<data::BatchLoader> Trainer::make_loader() {
  const auto& d = config_.data();
  data::BatchLoaderOptions o;
  o.source = data_.train.get();
  o.decoding = sample_decoding(config_, log_);
  o.cache_bytes = read_ahead_bytes(config_);
  o.transform = &transform_;
  o.seed = config_.run().seed;
  o.epochs = config_.train().epochs;
  o.global_batch = static_cast<std::size_t>(config_.train().batch_size);
  o.trainers = trainers_.size();
  o.trainer = trainers_.rank();
  o.aggregators = config_.comm().aggregators;
  o.nonaggregator_batch = static_cast<std::size_t>(config_.comm().nonaggregator_batch_size);
  o.threads = config_.cluster().preprocess_threads;
  o.prefetch = d.prefetch_batches;
  o.schedule = &progress_.offload;
  o.timeline = timeline_;
  o.pixel_memory = backend_->pixel_memory();  // a GPU trainer normalises on the device
  o.pixel_batches = o.pixel_memory != nullptr;
  o.start_epoch = progress_.position.epoch;
  o.start_step = progress_.position.step;
  o.client.comm = service_.comm;
  o.client.worker_ranks = service_.worker_ranks;
  o.client.credits = d.worker_credits;
  o.client.timeout = std::chrono::duration<double>(d.worker_timeout_s);
  o.client.backoff = std::chrono::duration<double>(d.worker_backoff_s);
  // A worker gets one request deadline (at least 2 s, for loaded machines) to deliver what it
  // owes after the goodbye; a frozen one must not hold the finished run's shutdown for
  // cluster.peer_timeout_s.
  o.client.shutdown_grace = std::chrono::duration<double>(std::max(d.worker_timeout_s, 2.0));
  o.client.log = log_;
  if (log_ != nullptr && progress_.offload.ratio() > 0 && service_.worker_ranks.empty()) {
    log_->warn(
        "data.offload_ratio = {} but the job has no worker ranks: trainer {} builds all "
        "its batches itself",
        progress_.offload.ratio(), trainers_.rank());
  }
  return std::make_unique<data::BatchLoader>(std::move(o));
}

// The step context the trainer hands to its callbacks.
class Trainer::Context final : public StepContext {
 public:
  Context(Trainer& trainer, std::size_t total_steps) : trainer_(trainer), total_(total_steps) {}
  std::size_t global_step() const noexcept override {
    return trainer_.progress_.position.global_step;
  }
  std::size_t total_steps() const noexcept override { return total_; }
  offload::RatioControl& offload() noexcept override { return *trainer_.loader_; }
  const offload::StepTimes& times() const noexcept override { return trainer_.step_.times; }
  void capture(ckpt::TrainingState& state) override { trainer_.capture(state); }
  void request_stop() noexcept override { stop_ = true; }
  bool stop_requested() const noexcept { return stop_; }

 private:
  Trainer& trainer_;
  std::size_t total_;
  bool stop_ = false;
};

void Trainer::record_step_phases(Clock::time_point start, Clock::time_point data,
                                 Clock::time_point backward, Clock::time_point sync,
                                 Clock::time_point end, double next_batch_wait) {
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  // A batch staged ahead was waited for during the previous step (prefetch_wait), and this
  // step's compute includes staging the next one, but not waiting for it.
  step_.times = {.data_wait = seconds(start, data) + step_.prefetch_wait,
                 .compute = seconds(data, backward) - next_batch_wait + seconds(sync, end),
                 .sync = seconds(backward, sync),
                 .callbacks = step_.callbacks_seconds};
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  const Position& p = progress_.position;
  const std::string args = fmt::format("{{\"epoch\": {}, \"step\": {}, \"global_step\": {}}}",
                                       p.epoch, p.step, p.global_step);
  timeline_->span("step", "train", start, end, args);
  timeline_->span("data wait", "data", start, data);
  timeline_->span("compute", "train", data, backward);
  timeline_->span("gradient sync", "comm", backward, sync);
  timeline_->span("optimizer", "train", sync, end);
}

double Trainer::stage_ahead(bool more_batches) {
  if (!backend_->stages_ahead() || !more_batches) return 0;
  const auto t_fetch = Clock::now();
  step_.prefetched = &loader_->next();
  const auto t_fetched = Clock::now();
  if (timeline_ != nullptr) timeline_->span("data wait (next batch)", "data", t_fetch, t_fetched);
  backend_->stage(*step_.prefetched);
  return std::chrono::duration<double>(t_fetched - t_fetch).count();
}

// Folds the steps since the last fold into the epoch's tally (global over the trainers); the
// report's batch-wait sums too.
void Trainer::fold_window() {
  Tally& window = reporting_.window;
  // The steps' losses wait here, not in every step (a GPU trainer's only wait for them).
  const model::LossResult losses = backend_->take_losses();
  window.loss += losses.loss_sum;
  window.correct += losses.correct;
  std::array<double, 5> totals{window.loss, window.correct, window.samples,
                               reporting_.window_data_wait,
                               static_cast<double>(reporting_.window_steps)};
  trainers_.allreduce_sum(totals, timeout_);
  progress_.epoch_tally.loss += totals[0];
  progress_.epoch_tally.correct += totals[1];
  progress_.epoch_tally.samples += totals[2];
  reporting_.data_wait_sum += totals[3];
  reporting_.trainer_steps += totals[4];
  window = Tally{};
  reporting_.window_data_wait = 0;
  reporting_.window_steps = 0;
}

TrainSummary Trainer::run(Callbacks callbacks) {
  const std::size_t total_steps = start_input();
  Context context(*this, total_steps);
  log_gradient_sync();
  backend_->connect();  // collective; every trainer has been built
  begin_callbacks(callbacks);
  reporting_.train_start = Clock::now();
  reporting_.first_step = progress_.position.global_step;
  reporting_.total_steps = total_steps;
  const auto epochs = static_cast<std::uint32_t>(config_.train().epochs);
  TrainSummary summary;
  summary.epochs = config_.train().epochs;
  for (Position& p = progress_.position; p.epoch < epochs && !context.stop_requested();
       ++p.epoch, p.step = 0) {
    const data::LoaderStats stats_before = train_epoch(context, callbacks);
    if (context.stop_requested()) break;  // the end-of-epoch work is redone on resume
    const EpochReport report = finish_epoch(stats_before);
    if (config_.train().eval) summary.final_test_accuracy = report.test_accuracy;
    progress_.metrics.push_back(metrics_json_line(report));
    for (auto* cb : callbacks) cb->on_epoch_end(report);
  }
  return end_run(context, callbacks, std::move(summary));
}

// The loader (from the restored position), the audit and the learning-rate schedule; returns
// the run's step count.
std::size_t Trainer::start_input() {
  const auto& cfg = config_.train();
  loader_ = make_loader();
  if (config_.data().audit) {
    audit_.audit.emplace(data_.train->size(),
                         config_.run().dir / fmt::format("audit-trainer{}.csv", trainers_.rank()),
                         progress_.resumed);
    if (!audit_.restored_counts.empty()) audit_.audit->add_counts(audit_.restored_counts);
  }
  const std::size_t total_steps = loader_->steps_per_epoch() * static_cast<std::size_t>(cfg.epochs);
  lr_schedule_.emplace(model::LrSchedule::from_config(cfg, total_steps));
  return total_steps;
}

void Trainer::log_gradient_sync() const {
  if (log_ == nullptr || trainers_.rank() != 0) return;
  const auto& cfg = config_.train();
  const data::BatchSplit split = batch_split();
  const int n = trainers_.size();
  const std::string batches =
      split.equal() ? fmt::format("{} samples per step in equal batches", cfg.batch_size)
                    : fmt::format(
                          "{} samples per step: {} per aggregator, {} per "
                          "non-aggregator",
                          cfg.batch_size, split.full_batch(0), split.full_batch(n - 1));
  log_->info("gradient sync: {} over {} trainer(s); {}", backend_->sync_name(), n, batches);
}

void Trainer::begin_callbacks(Callbacks callbacks) {
  if (progress_.resumed) {
    ckpt::TrainingState view;  // what callbacks need to know of the restored run
    view.epoch = progress_.position.epoch;
    view.step = progress_.position.step;
    view.global_step = progress_.position.global_step;
    view.metrics = progress_.metrics;
    for (auto* cb : callbacks) cb->on_resume(view);
  }
  for (auto* cb : callbacks) cb->on_train_begin(backend_->sync_host_model());
}

// Trains the current epoch from its current step on (a resumed run starts mid-epoch); returns
// the loader's counters at the start.
data::LoaderStats Trainer::train_epoch(Context& context, Callbacks callbacks) {
  reporting_.epoch_start = reporting_.window_start = Clock::now();
  reporting_.reported = progress_.epoch_tally;  // zero, or a resumed epoch's tally
  const data::LoaderStats stats_before = loader_->stats();
  const std::size_t steps_per_epoch = loader_->steps_per_epoch();
  while (progress_.position.step < steps_per_epoch && !context.stop_requested()) {
    const std::size_t step = progress_.position.step;
    const Clock::time_point end = train_step();
    for (auto* cb : callbacks) cb->on_step_end(context);
    step_.callbacks_seconds = seconds_since(end);
    report_steps(step, callbacks);
  }
  return stats_before;
}

// One step: batch, forward and backward, gradient exchange, update; returns when it ended.
Trainer::Clock::time_point Trainer::train_step() {
  Position& p = progress_.position;
  const std::size_t steps_per_epoch = loader_->steps_per_epoch();
  const auto t_start = Clock::now();
  // A batch staged during the previous step is already on its way to the device.
  const bool staged = step_.prefetched != nullptr;
  data::Batch& batch = staged ? *std::exchange(step_.prefetched, nullptr) : loader_->next();
  const auto t_data = Clock::now();
  CONFLUX_CHECK(batch.epoch == p.epoch && batch.step == p.step,
                "trainer {} got batch {}/{} for step {}/{}", trainers_.rank(), batch.epoch,
                batch.step, p.epoch, p.step);
  if (audit_.audit) audit_.audit->record(batch);
  const std::size_t samples = batch.labels.size();
  const std::size_t step_samples = batch.step_samples;
  // Scale by the global step size so that the sum over trainers is the global mean.
  const float grad_scale = 1.0f / static_cast<float>(step_samples);
  if (!staged) backend_->stage(batch);
  backend_->compute(grad_scale, p.global_step);
  // While the device computes, the next batch is fetched (invalidates `batch`), across the
  // epoch's end too: the loader delivers in plan order over epochs.
  const double next_batch_wait =
      stage_ahead(p.step + 1 < steps_per_epoch ||
                  p.epoch + 1 < static_cast<std::uint32_t>(config_.train().epochs));
  const auto t_backward = Clock::now();
  const double local_sq = noise_ ? backend_->gradient_sum_of_squares() : 0.0;
  const comm::Merged merged = backend_->exchange();
  const auto t_sync = Clock::now();
  if (noise_) {
    const bool current = merged == comm::Merged::kCurrent;
    noise_->record(local_sq, samples, step_samples, current,
                   current ? backend_->gradient_sum_of_squares() : 0.0);
  }
  if (merged == comm::Merged::kCurrent) apply_merged(p.global_step);
  if (merged == comm::Merged::kPrevious) apply_merged(p.global_step - 1);
  const auto t_end = Clock::now();
  record_step_phases(t_start, t_data, t_backward, t_sync, t_end, next_batch_wait);
  step_.prefetch_wait = next_batch_wait;
  reporting_.window.samples += static_cast<double>(samples);
  reporting_.window_data_wait += step_.times.data_wait;
  ++reporting_.window_steps;
  ++p.step;
  ++p.global_step;
  return t_end;
}

// Every train.log_every steps and at the epoch's end: folds the window into the epoch's tally
// and, when logging, reports it for step `step` (the one just trained).
void Trainer::report_steps(std::size_t step, Callbacks callbacks) {
  const auto& cfg = config_.train();
  const std::size_t steps_per_epoch = loader_->steps_per_epoch();
  const std::size_t done = progress_.position.step;
  const bool last = done == steps_per_epoch;
  if (!(cfg.log_every > 0 && done % static_cast<std::size_t>(cfg.log_every) == 0) && !last) return;
  fold_window();  // a checkpoint may have folded part of the report's steps already
  const double window_seconds = seconds_since(reporting_.window_start);
  const Tally& after = progress_.epoch_tally;
  const Tally& before = reporting_.reported;
  const Tally w{after.loss - before.loss, after.correct - before.correct,
                after.samples - before.samples};
  const double data_wait =
      reporting_.trainer_steps > 0 ? reporting_.data_wait_sum / reporting_.trainer_steps : 0.0;
  reporting_.reported = after;
  reporting_.window_start = Clock::now();
  reporting_.data_wait_sum = reporting_.trainer_steps = 0;
  if (cfg.log_every <= 0 || w.samples <= 0) return;
  StepReport report;
  report.step = progress_.position.global_step;
  report.epoch = progress_.position.epoch + 1;
  report.epoch_step = step + 1;
  report.steps_in_epoch = steps_per_epoch;
  report.loss = w.loss / w.samples;
  report.accuracy = w.correct / w.samples;
  report.samples_per_s = w.samples / window_seconds;
  report.total_steps = reporting_.total_steps;
  report.learning_rate = lr_schedule_->at(report.step - 1);
  report.data_wait_ms = 1e3 * data_wait;
  report.offload_ratio = progress_.offload.ratio();
  if (cfg.clip_grad_norm > 0) report.grad_norm = backend_->clipped_grad_norm();
  const double launch_seconds = seconds_since(reporting_.train_start);
  report.time_s = progress_.elapsed_seconds_before + launch_seconds;
  const auto launch_steps = static_cast<double>(report.step - reporting_.first_step);
  report.eta_s = launch_steps > 0 ? launch_seconds / launch_steps *
                                        static_cast<double>(reporting_.total_steps - report.step)
                                  : 0.0;
  for (auto* cb : callbacks) cb->on_step_report(report);
}

TrainSummary Trainer::end_run(const Context& context, Callbacks callbacks, TrainSummary summary) {
  drain_sync();  // a stopped run's last steps (a finished run drained after its last epoch)
  step_.prefetched =
      nullptr;  // a stopped run's next batch, fetched ahead: dropped with the loader's
  summary.stopped = context.stop_requested();
  summary.global_step = progress_.position.global_step;
  summary.total_seconds = progress_.elapsed_seconds_before + seconds_since(reporting_.train_start);
  loader_->finish();
  report_data_service(loader_->stats());
  if (const std::string how = backend_->compute_summary(); log_ != nullptr && !how.empty()) {
    log_->info("trainer {}: {}", trainers_.rank(), how);
  }
  summary.lost_workers = static_cast<std::size_t>(
      trainers_.allreduce_max(static_cast<std::int64_t>(loader_->stats().client.lost_workers)));
  summary.digest = model::weights_digest(backend_->sync_host_model());  // the GPU's, downloaded
  check_replicas_agree(summary.digest);
  if (!summary.stopped) {
    for (auto* cb : callbacks) cb->on_train_end(backend_->host_model(), summary);
  }
  return summary;
}

EpochReport Trainer::finish_epoch(const data::LoaderStats& stats_before) {
  drain_sync();  // the epoch ends, and evaluation needs the replicas' common weights
  const auto& cfg = config_.train();
  Tally& tally = progress_.epoch_tally;
  const int epoch = static_cast<int>(progress_.position.epoch);  // 0-based, as the audit's
  EpochReport report;
  report.epoch = progress_.position.epoch + 1;
  report.epochs = cfg.epochs;
  report.global_step = progress_.position.global_step;
  report.epoch_seconds = progress_.epoch_seconds_before + seconds_since(reporting_.epoch_start);
  progress_.epoch_seconds_before = 0;
  report.samples = static_cast<std::size_t>(tally.samples);
  report.train_loss = tally.loss / tally.samples;
  report.train_accuracy = tally.correct / tally.samples;
  report.samples_per_s = tally.samples / report.epoch_seconds;
  tally = Tally{};
  const data::LoaderStats stats_after = loader_->stats();
  std::array<double, 3> origins{static_cast<double>(stats_after.local - stats_before.local),
                                static_cast<double>(stats_after.worker - stats_before.worker),
                                static_cast<double>(stats_after.fallback - stats_before.fallback)};
  trainers_.allreduce_sum(origins, timeout_);
  report.local_batches = static_cast<std::size_t>(origins[0]);
  report.worker_batches = static_cast<std::size_t>(origins[1]);
  report.fallback_batches = static_cast<std::size_t>(origins[2]);
  report.audited = audit_epoch(epoch);
  if (noise_) add_noise_scale(report);
  report.eval_seconds = 0;
  report.test_loss = report.test_accuracy = std::numeric_limits<double>::quiet_NaN();
  if (cfg.eval) {
    const auto eval_start = Clock::now();
    const EvalResult eval = evaluate();
    report.eval_seconds = seconds_since(eval_start);
    report.test_loss = eval.loss;
    report.test_accuracy = eval.accuracy;
  }
  report.elapsed_seconds = progress_.elapsed_seconds_before + seconds_since(reporting_.train_start);
  return report;
}

// data.audit's check of epoch `epoch` (0-based); true when it was audited.
bool Trainer::audit_epoch(int epoch) {
  if (!audit_.audit) return false;
  if (epoch == audit_.unaudited_epoch) {
    audit_.audit->discard_epoch();
    if (log_ != nullptr && trainers_.rank() == 0) {
      log_->warn(
          "audit: epoch {} began before data.audit was on (the checkpoint has no "
          "counts); it is not audited",
          epoch);
    }
    return false;
  }
  const AuditResult audited = audit_.audit->check_epoch(epoch, trainers_, timeout_);
  if (audited.skipped > 0 && log_ != nullptr && trainers_.rank() == 0) {
    log_->warn(
        "audit: epoch {}: every sample used or skipped exactly once; {} skipped as "
        "corrupt (data.on_corrupt = \"skip\")",
        epoch, audited.skipped);
  }
  return true;
}

// train.noise_scale's estimate of the epoch into `report` (left unset when no step measured
// it), and a fresh epoch for the meter.
void Trainer::add_noise_scale(EpochReport& report) {
  const std::size_t steps = noise_->epoch().steps();
  if (steps == 0 && log_ != nullptr && trainers_.rank() == 0) {
    log_->warn(
        "train.noise_scale: no step of epoch {} compared equal per-trainer batches with this "
        "step's merged gradient (uneven batches, or stale K-Reduce non-aggregators): not "
        "measured",
        report.epoch);
  }
  if (steps > 0) {
    report.noise_steps = steps;
    report.noise_scale = noise_->epoch().noise_scale();
    report.grad_norm2 = noise_->epoch().gradient_norm2();
    report.grad_trace = noise_->epoch().trace();
  }
  noise_->start_epoch();
}

void Trainer::report_data_service(const data::LoaderStats& s) const {
  if (log_ == nullptr) return;
  log_memory(*log_, fmt::format("trainer {}", trainers_.rank()), s.fetcher, s.skipped,
             data_.train->resident_bytes() + data_.test->resident_bytes());
  if (service_.worker_ranks.empty()) return;
  const auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  log_->info(
      "trainer {}: batches {} local, {} from workers, {} rebuilt after a timeout; {} late "
      "answer(s) dropped, {} cancelled; in flight at most {} batches ({:.1f} MiB, bound "
      "{:.1f} MiB)",
      trainers_.rank(), s.local, s.worker, s.fallback, s.client.late_dropped, s.client.cancelled,
      s.peak_batches_in_flight, mib(s.peak_bytes_in_flight), mib(s.bound_bytes_in_flight));
}

EvalResult Trainer::evaluate() {
  // Each trainer evaluates a contiguous shard of the test set; sums are reduced.
  return evaluate_split(
      config_, *data_.test, transform_, trainers_, log_,
      [&](const data::Batch& batch) { return backend_->evaluate(batch); },
      backend_->pixel_memory());  // 8-bit test batches where training batches are
}

void Trainer::check_replicas_agree(const std::string& digest) const {
  // Replicas must hold identical weights; a difference means non-deterministic reduction.
  const auto prefix = static_cast<std::int64_t>(std::stoull(digest.substr(0, 15), nullptr, 16));
  CONFLUX_CHECK(trainers_.allreduce_min(prefix) == trainers_.allreduce_max(prefix),
                "trainer replicas ended with different weights (digest {} on trainer {})", digest,
                trainers_.rank());
}

}  // namespace conflux::train
