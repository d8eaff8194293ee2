#include "conflux/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/lr_schedule.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/train/run_recorder.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

model::Model make_model(const Config& config, const data::SampleTransform& transform,
                        int num_classes) {
  const data::ImageShape in = transform.output_shape();
  try {
    return model::Model(config.layers(), {in.channels, in.height, in.width}, num_classes,
                        config.run().seed);
  } catch (const InputError& e) {
    CONFLUX_INPUT_ERROR("{}: model.layers: {}", config.where("model.layers"), e.what());
  }
}

// The model on the device setup.device names (the CPU unless a GPU was chosen).
std::unique_ptr<ComputeBackend> make_backend(const TrainerSetup& setup, model::Model model,
                                             std::chrono::duration<double> timeout,
                                             std::size_t max_batch) {
  const BackendOptions options{.config = &setup.config,
                               .trainers = &setup.trainers,
                               .timeout = timeout,
                               .num_classes = setup.data.train.num_classes,
                               .max_batch = max_batch,
                               .device = setup.device};
  if (setup.device.device == ComputeDevice::kGpu) {
    return make_gpu_backend(std::move(model), options);
  }
  return make_cpu_backend(std::move(model), options);
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
      transform_(make_transform(config_, data_.train)),
      backend_(make_backend(setup, make_model(config_, transform_, data_.train.num_classes),
                            timeout_, batch_split().max_batch(trainers_.rank()))),
      offload_ratio_(config_.data().offload_ratio_for(trainers_.rank())) {}

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
  backend_->apply(static_cast<float>(schedule_->at(global_step)));
}

void Trainer::drain_sync() {
  // A sync point: afterwards every replica has applied every merged update so far.
  if (backend_->drain()) apply_merged(position_.global_step - 1);
}

std::unique_ptr<data::BatchLoader> Trainer::make_loader() const {
  const auto& d = config_.data();
  data::BatchLoaderOptions o;
  o.dataset = &data_.train;
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
  o.offload_ratio = offload_ratio_;
  o.timeline = timeline_;
  o.offload_credit = offload_credit_;
  o.start_epoch = position_.epoch;
  o.start_step = position_.step;
  o.client.comm = service_.comm;
  o.client.worker_ranks = service_.worker_ranks;
  o.client.credits = d.worker_credits;
  o.client.timeout = std::chrono::duration<double>(d.worker_timeout_s);
  o.client.backoff = std::chrono::duration<double>(d.worker_backoff_s);
  o.client.drain_timeout = std::chrono::duration<double>(config_.cluster().peer_timeout_s);
  o.client.log = log_;
  if (log_ != nullptr && o.offload_ratio > 0 && service_.worker_ranks.empty()) {
    log_->warn(
        "data.offload_ratio = {} but the job has no worker ranks: trainer {} builds all "
        "its batches itself",
        o.offload_ratio, trainers_.rank());
  }
  return std::make_unique<data::BatchLoader>(std::move(o));
}

// The step context the trainer hands to its callbacks.
class Trainer::Context final : public StepContext {
 public:
  Context(Trainer& trainer, std::size_t total_steps) : trainer_(trainer), total_(total_steps) {}
  std::size_t global_step() const noexcept override { return trainer_.position_.global_step; }
  std::size_t total_steps() const noexcept override { return total_; }
  offload::OffloadControl& offload() noexcept override { return *trainer_.loader_; }
  const offload::StepTimes& times() const noexcept override { return trainer_.step_times_; }
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
  // A batch staged ahead was waited for during the previous step (prefetch_wait_), and this
  // step's compute includes staging the next one, but not waiting for it.
  step_times_ = {.data_wait = seconds(start, data) + prefetch_wait_,
                 .compute = seconds(data, backward) - next_batch_wait + seconds(sync, end),
                 .sync = seconds(backward, sync),
                 .callbacks = callbacks_seconds_};
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  const std::string args = fmt::format("{{\"epoch\": {}, \"step\": {}, \"global_step\": {}}}",
                                       position_.epoch, position_.step, position_.global_step);
  timeline_->span("step", "train", start, end, args);
  timeline_->span("data wait", "data", start, data);
  timeline_->span("compute", "train", data, backward);
  timeline_->span("gradient sync", "comm", backward, sync);
  timeline_->span("optimizer", "train", sync, end);
}

double Trainer::stage_ahead(bool epoch_goes_on) {
  if (!backend_->stages_ahead() || !epoch_goes_on) return 0;
  const auto t_fetch = Clock::now();
  prefetched_ = &loader_->next();
  const auto t_fetched = Clock::now();
  if (timeline_ != nullptr) timeline_->span("data wait (next batch)", "data", t_fetch, t_fetched);
  backend_->stage(*prefetched_);
  return std::chrono::duration<double>(t_fetched - t_fetch).count();
}

void Trainer::restore(const ckpt::TrainingState& state, const std::string& source) {
  const auto& infos = backend_->param_infos();
  const auto shape_of = [](const auto& shape) {
    return fmt::format("[{}]", fmt::join(shape, ","));
  };
  bool same = state.tensors.size() == infos.size() && state.params.size() == backend_->num_params();
  std::string first_difference =
      fmt::format("{} tensors / {} parameters in the checkpoint, {} / {} in this model",
                  state.tensors.size(), state.params.size(), infos.size(), backend_->num_params());
  for (std::size_t i = 0; same && i < infos.size(); ++i) {
    const auto& a = state.tensors[i];
    const std::vector<std::uint64_t> want(infos[i].shape.begin(), infos[i].shape.end());
    if (a.name != infos[i].name || a.shape != want) {
      same = false;
      first_difference = fmt::format("tensor {} is {} {} in the checkpoint but {} {} in this model",
                                     i, a.name, shape_of(a.shape), infos[i].name, shape_of(want));
    }
  }
  CONFLUX_REQUIRE(same,
                  "checkpoint {} holds a model of another shape ({}); model.layers is set at {}",
                  source, first_difference, config_.where("model.layers"));
  CONFLUX_REQUIRE(state.dataset_size == data_.train.size(),
                  "checkpoint {} was made on {} training samples, this run has {}", source,
                  state.dataset_size, data_.train.size());
  backend_->restore(state.params, state.velocity, state.optimizer_started);
  position_ = {state.epoch, static_cast<std::size_t>(state.step),
               static_cast<std::size_t>(state.global_step)};
  const auto t = static_cast<std::size_t>(trainers_.rank());
  if (state.trainers == static_cast<std::uint32_t>(trainers_.size()) && t < state.progress.size()) {
    offload_ratio_ = state.progress[t].offload.ratio;
    offload_credit_ = state.progress[t].offload.credit;
  }
  epoch_tally_ = {state.epoch_loss_sum, state.epoch_correct, state.epoch_samples};
  restored_epoch_seconds_ = state.epoch_seconds;
  restored_elapsed_seconds_ = state.elapsed_seconds;
  // The counts are sums over the trainers: one trainer restores them for all.
  if (t == 0) restored_audit_counts_ = state.audit_counts;
  if (config_.data().audit && state.audit_counts.empty() && state.step > 0) {
    unaudited_epoch_ = state.epoch;
  }
  metrics_ = state.metrics;
  resumed_ = true;
}

void Trainer::fold_window() {
  std::array<double, 3> totals{window_.loss, window_.correct, window_.samples};
  trainers_.allreduce_sum(totals, timeout_);
  epoch_tally_.loss += totals[0];
  epoch_tally_.correct += totals[1];
  epoch_tally_.samples += totals[2];
  window_ = Tally{};
  window_start_ = Clock::now();
}

void Trainer::capture(ckpt::TrainingState& s) {
  drain_sync();  // with stale non-aggregators a checkpoint is a sync point
  fold_window();
  const int n_trainers = trainers_.size();
  const auto t = static_cast<std::size_t>(trainers_.rank());
  s.epoch = position_.epoch;
  s.step = position_.step;
  s.global_step = position_.global_step;
  s.steps_per_epoch = loader_->steps_per_epoch();
  s.global_batch = static_cast<std::uint64_t>(config_.train().batch_size);
  s.dataset_size = data_.train.size();
  s.seed = config_.run().seed;
  s.trainers = static_cast<std::uint32_t>(n_trainers);
  s.workers = static_cast<std::uint32_t>(service_.worker_ranks.size());
  // Per-trainer progress: each fills its slot, the sum gathers them everywhere.
  std::vector<double> progress(3 * static_cast<std::size_t>(n_trainers), 0.0);
  progress[3 * t] = static_cast<double>(position_.step * static_cast<std::size_t>(n_trainers) + t);
  progress[3 * t + 1] = loader_->offload_ratio();
  progress[3 * t + 2] = loader_->offload_credit();
  trainers_.allreduce_sum(progress, timeout_);
  s.progress.resize(static_cast<std::size_t>(n_trainers));
  for (std::size_t i = 0; i < s.progress.size(); ++i) {
    s.progress[i] = {static_cast<std::uint64_t>(progress[3 * i]),
                     {progress[3 * i + 1], progress[3 * i + 2]}};
  }
  s.audit_counts.clear();
  if (audit_) {
    s.audit_counts.assign(audit_->counts().begin(), audit_->counts().end());
    trainers_.allreduce_sum(s.audit_counts, timeout_);
  }
  s.epoch_loss_sum = epoch_tally_.loss;
  s.epoch_correct = epoch_tally_.correct;
  s.epoch_samples = epoch_tally_.samples;
  s.epoch_seconds = restored_epoch_seconds_ + seconds_since(epoch_start_);
  s.elapsed_seconds = restored_elapsed_seconds_ + seconds_since(train_start_);
  s.created = local_time("%Y-%m-%dT%H:%M:%S");
  s.metrics = metrics_;
  s.lr = backend_->lr();
  s.optimizer_started = backend_->sgd_started();
  if (t != 0) return;  // the replicas are identical: trainer 0 keeps the one copy
  s.config_toml = config_.resolved_toml();
  s.tensors.clear();
  for (const model::ParamInfo& info : backend_->param_infos()) {
    s.tensors.push_back({info.name, {info.shape.begin(), info.shape.end()}, info.offset});
  }
  backend_->download(s.params, s.velocity);  // the GPU's state is downloaded
}

TrainSummary Trainer::run(std::span<TrainingCallback* const> callbacks) {
  const auto& cfg = config_.train();
  const int trainer = trainers_.rank();
  loader_ = make_loader();
  if (config_.data().audit) {
    audit_.emplace(data_.train.size(),
                   config_.run().dir / fmt::format("audit-trainer{}.csv", trainer), resumed_);
    if (!restored_audit_counts_.empty()) audit_->add_counts(restored_audit_counts_);
  }
  const std::size_t steps_per_epoch = loader_->steps_per_epoch();
  const std::size_t total_steps = steps_per_epoch * static_cast<std::size_t>(cfg.epochs);
  schedule_.emplace(model::LrSchedule::parse_kind(cfg.lr_schedule), cfg.lr, total_steps,
                    static_cast<std::size_t>(cfg.warmup_steps));
  Context context(*this, total_steps);
  if (log_ != nullptr && trainer == 0) {
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
  backend_->connect();  // collective; every trainer has been built

  if (resumed_) {
    ckpt::TrainingState view;  // what callbacks need to know of the restored run
    view.epoch = position_.epoch;
    view.step = position_.step;
    view.global_step = position_.global_step;
    view.metrics = metrics_;
    for (auto* cb : callbacks) cb->on_resume(view);
  }
  for (auto* cb : callbacks) cb->on_train_begin(backend_->sync_host_model());
  train_start_ = Clock::now();
  TrainSummary summary;
  summary.epochs = cfg.epochs;
  for (; position_.epoch < static_cast<std::uint32_t>(cfg.epochs) && !context.stop_requested();
       ++position_.epoch, position_.step = 0) {
    const std::uint32_t epoch = position_.epoch;
    epoch_start_ = window_start_ = Clock::now();
    const data::LoaderStats stats_before = loader_->stats();
    for (; position_.step < steps_per_epoch && !context.stop_requested();) {
      const std::size_t step = position_.step;
      const auto t_start = Clock::now();
      // A batch staged during the previous step is already on its way to the device.
      const bool staged = prefetched_ != nullptr;
      const data::Batch& batch = staged ? *std::exchange(prefetched_, nullptr) : loader_->next();
      const auto t_data = Clock::now();
      CONFLUX_CHECK(batch.epoch == epoch && batch.step == step,
                    "trainer {} got batch {}/{} for step {}/{}", trainer, batch.epoch, batch.step,
                    epoch, step);
      if (audit_) audit_->record(batch);
      const std::size_t samples = batch.labels.size();
      // Scale by the global step size so that the sum over trainers is the global mean.
      const float grad_scale = 1.0f / static_cast<float>(batch.step_samples);
      if (!staged) backend_->stage(batch);
      backend_->compute(grad_scale);
      // While the device computes, the epoch's next batch is fetched (invalidates `batch`).
      const double next_batch_wait = stage_ahead(step + 1 < steps_per_epoch);
      const model::LossResult result = backend_->loss();
      const auto t_backward = Clock::now();
      const comm::Merged merged = backend_->exchange();
      const auto t_sync = Clock::now();
      if (merged == comm::Merged::kCurrent) apply_merged(position_.global_step);
      if (merged == comm::Merged::kPrevious) apply_merged(position_.global_step - 1);
      const auto t_end = Clock::now();
      record_step_phases(t_start, t_data, t_backward, t_sync, t_end, next_batch_wait);
      prefetch_wait_ = next_batch_wait;
      window_.loss += result.loss_sum;
      window_.correct += result.correct;
      window_.samples += static_cast<double>(samples);
      ++position_.step;
      ++position_.global_step;
      for (auto* cb : callbacks) cb->on_step_end(context);
      callbacks_seconds_ = seconds_since(t_end);

      const bool last = position_.step == steps_per_epoch;
      if ((cfg.log_every > 0 && position_.step % static_cast<std::size_t>(cfg.log_every) == 0) ||
          last) {
        const double window_seconds = seconds_since(window_start_);
        const Tally before = epoch_tally_;
        fold_window();
        const Tally w{epoch_tally_.loss - before.loss, epoch_tally_.correct - before.correct,
                      epoch_tally_.samples - before.samples};
        if (cfg.log_every > 0 && w.samples > 0) {
          const StepReport report{static_cast<int>(epoch), step,
                                  steps_per_epoch,         w.loss / w.samples,
                                  w.correct / w.samples,   w.samples / window_seconds};
          for (auto* cb : callbacks) cb->on_step_report(report);
        }
      }
    }
    if (context.stop_requested()) break;  // the end-of-epoch work is redone on resume
    const EpochReport report = finish_epoch(stats_before);
    if (cfg.eval) summary.final_test_accuracy = report.test_accuracy;
    metrics_.push_back(metrics_json_line(report));
    for (auto* cb : callbacks) cb->on_epoch_end(report);
  }
  drain_sync();  // a stopped run's last steps (a finished run drained after its last epoch)
  prefetched_ = nullptr;  // a stopped run's next batch, fetched ahead: dropped with the loader's
  summary.stopped = context.stop_requested();
  summary.global_step = position_.global_step;
  summary.total_seconds = restored_elapsed_seconds_ + seconds_since(train_start_);
  loader_->finish();
  report_data_service(loader_->stats());
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
  EpochReport report;
  report.epoch = static_cast<int>(position_.epoch);
  report.epochs = cfg.epochs;
  report.epoch_seconds = restored_epoch_seconds_ + seconds_since(epoch_start_);
  restored_epoch_seconds_ = 0;
  report.samples = static_cast<std::size_t>(epoch_tally_.samples);
  report.train_loss = epoch_tally_.loss / epoch_tally_.samples;
  report.train_accuracy = epoch_tally_.correct / epoch_tally_.samples;
  report.samples_per_s = epoch_tally_.samples / report.epoch_seconds;
  epoch_tally_ = Tally{};
  const data::LoaderStats stats_after = loader_->stats();
  std::array<double, 3> origins{static_cast<double>(stats_after.local - stats_before.local),
                                static_cast<double>(stats_after.worker - stats_before.worker),
                                static_cast<double>(stats_after.fallback - stats_before.fallback)};
  trainers_.allreduce_sum(origins, timeout_);
  report.local_batches = static_cast<std::size_t>(origins[0]);
  report.worker_batches = static_cast<std::size_t>(origins[1]);
  report.fallback_batches = static_cast<std::size_t>(origins[2]);
  if (audit_ && report.epoch == unaudited_epoch_) {
    audit_->discard_epoch();
    if (log_ != nullptr && trainers_.rank() == 0) {
      log_->warn(
          "audit: epoch {} began before data.audit was on (the checkpoint has no "
          "counts); it is not audited",
          report.epoch);
    }
  } else if (audit_) {
    audit_->check_epoch(report.epoch, trainers_, timeout_);
    report.audited = true;
  }
  report.test_loss = report.test_accuracy = std::numeric_limits<double>::quiet_NaN();
  if (cfg.eval) {
    const auto eval_start = Clock::now();
    const EvalResult eval = evaluate();
    report.eval_seconds = seconds_since(eval_start);
    report.test_loss = eval.loss;
    report.test_accuracy = eval.accuracy;
  }
  report.elapsed_seconds = restored_elapsed_seconds_ + seconds_since(train_start_);
  return report;
}

void Trainer::report_data_service(const data::LoaderStats& s) const {
  if (log_ == nullptr || service_.worker_ranks.empty()) return;
  const auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  log_->info(
      "trainer {}: batches {} local, {} from workers, {} rebuilt after a timeout; {} late "
      "answer(s) dropped, {} cancelled; in flight at most {} batches ({:.1f} MiB, bound "
      "{:.1f} MiB)",
      trainers_.rank(), s.local, s.worker, s.fallback, s.client.late_dropped, s.client.cancelled,
      s.peak_batches_in_flight, mib(s.peak_bytes_in_flight), mib(s.bound_bytes_in_flight));
}

Trainer::EvalResult Trainer::evaluate() {
  // Each trainer evaluates a contiguous shard of the test set; sums are reduced.
  const auto& test = data_.test;
  const auto t = static_cast<std::size_t>(trainers_.rank());
  const auto n_trainers = static_cast<std::size_t>(trainers_.size());
  const std::size_t begin = test.size() * t / n_trainers;
  const std::size_t end = test.size() * (t + 1) / n_trainers;
  constexpr std::size_t kEvalBatch = 500;
  data::BatchBuilder builder(test, transform_, config_.cluster().preprocess_threads);
  model::Tensor images;
  std::vector<std::uint8_t> labels;
  std::array<double, 2> sums{0, 0};
  for (std::size_t lo = begin; lo < end; lo += kEvalBatch) {
    builder.build_eval(lo, std::min(end, lo + kEvalBatch), images, labels);
    const model::LossResult result = backend_->evaluate(images, labels);
    sums[0] += result.loss_sum;
    sums[1] += result.correct;
  }
  trainers_.allreduce_sum(sums, timeout_);
  const double n = static_cast<double>(test.size());
  return {sums[0] / n, sums[1] / n};
}

void Trainer::check_replicas_agree(const std::string& digest) const {
  // Replicas must hold identical weights; a difference means non-deterministic reduction.
  const auto prefix = static_cast<std::int64_t>(std::stoull(digest.substr(0, 15), nullptr, 16));
  CONFLUX_CHECK(trainers_.allreduce_min(prefix) == trainers_.allreduce_max(prefix),
                "trainer replicas ended with different weights (digest {} on trainer {})", digest,
                trainers_.rank());
}

}  // namespace conflux::train
