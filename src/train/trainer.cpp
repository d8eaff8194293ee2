#include "conflux/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "conflux/data/batch_builder.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/lr_schedule.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/train/sample_audit.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

// Sums of loss, correct predictions and samples, reduced over trainers when reported.
struct Tally {
  double loss = 0, correct = 0, samples = 0;
  void add(const model::LossResult& r, std::size_t n) {
    loss += r.loss_sum;
    correct += r.correct;
    samples += static_cast<double>(n);
  }
};

}  // namespace

Trainer::Trainer(const TrainerSetup& setup)
    : config_(setup.config),
      trainers_(setup.trainers),
      data_(setup.data),
      service_(setup.service),
      log_(setup.log),
      transform_(make_transform(config_, data_.train)),
      model_(make_model(config_, transform_, data_.train.num_classes)),
      sgd_(model::SgdOptions{static_cast<float>(config_.train().lr),
                             static_cast<float>(config_.train().momentum),
                             static_cast<float>(config_.train().weight_decay)},
           model_.params().size()),
      sync_(std::make_unique<comm::MpiAllreduceSync>(
          trainers_, std::chrono::duration<double>(config_.cluster().peer_timeout_s))) {}

Trainer::~Trainer() = default;

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
  o.threads = config_.cluster().preprocess_threads;
  o.prefetch = d.prefetch_batches;
  o.offload_ratio = d.offload_ratio_for(trainers_.rank());
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

TrainSummary Trainer::run(std::span<TrainingCallback* const> callbacks) {
  const auto& cfg = config_.train();
  const int trainer = trainers_.rank();
  const auto timeout = std::chrono::duration<double>(config_.cluster().peer_timeout_s);
  const std::unique_ptr<data::BatchLoader> loader = make_loader();
  std::optional<SampleAudit> audit;
  if (config_.data().audit) {
    audit.emplace(data_.train.size(),
                  config_.run().dir / fmt::format("audit-trainer{}.csv", trainer));
  }
  model::Tensor grad_logits;
  const std::size_t steps_per_epoch = loader->steps_per_epoch();
  const model::LrSchedule schedule(model::LrSchedule::parse_kind(cfg.lr_schedule), cfg.lr,
                                   steps_per_epoch * static_cast<std::size_t>(cfg.epochs),
                                   static_cast<std::size_t>(cfg.warmup_steps));
  std::size_t global_step = 0;

  for (auto* cb : callbacks) cb->on_train_begin(model_);
  const auto train_start = Clock::now();
  TrainSummary summary;
  summary.epochs = cfg.epochs;
  for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    auto window_start = epoch_start;
    Tally epoch_tally, window;
    const data::LoaderStats stats_before = loader->stats();
    for (std::size_t step = 0; step < steps_per_epoch; ++step) {
      const data::Batch& batch = loader->next();
      CONFLUX_CHECK(batch.epoch == static_cast<std::uint32_t>(epoch) && batch.step == step,
                    "trainer {} got batch {}/{} for step {}/{}", trainer, batch.epoch, batch.step,
                    epoch, step);
      if (audit) audit->record(batch);
      const auto& labels = batch.labels;
      const model::Tensor& logits = model_.forward(batch.images);
      // Scale by the global step size so that the sum over trainers is the global mean.
      const float grad_scale = 1.0f / static_cast<float>(batch.step_samples);
      const auto result = model::softmax_cross_entropy(logits, labels, grad_scale, &grad_logits);
      model_.backward(grad_logits);
      sync_->sum(model_.grads());
      sgd_.set_lr(static_cast<float>(schedule.at(global_step++)));
      sgd_.step(model_.params(), model_.grads());
      window.add(result, labels.size());
      for (auto* cb : callbacks) cb->on_step_end(global_step - 1, *loader);

      const bool last = step + 1 == steps_per_epoch;
      if ((cfg.log_every > 0 && (step + 1) % cfg.log_every == 0) || last) {
        std::array<double, 3> totals{window.loss, window.correct, window.samples};
        trainers_.allreduce_sum(totals, timeout);
        StepReport report{epoch,
                          step,
                          steps_per_epoch,
                          totals[0] / totals[2],
                          totals[1] / totals[2],
                          totals[2] / seconds_since(window_start)};
        if (!last || cfg.log_every > 0) {
          for (auto* cb : callbacks) cb->on_step_report(report);
        }
        epoch_tally.loss += totals[0];
        epoch_tally.correct += totals[1];
        epoch_tally.samples += totals[2];
        window = Tally{};
        window_start = Clock::now();
      }
    }
    EpochReport report;
    report.epoch = epoch;
    report.epochs = cfg.epochs;
    report.epoch_seconds = seconds_since(epoch_start);
    report.samples = static_cast<std::size_t>(epoch_tally.samples);
    report.train_loss = epoch_tally.loss / epoch_tally.samples;
    report.train_accuracy = epoch_tally.correct / epoch_tally.samples;
    report.samples_per_s = epoch_tally.samples / report.epoch_seconds;
    const data::LoaderStats stats_after = loader->stats();
    std::array<double, 3> origins{
        static_cast<double>(stats_after.local - stats_before.local),
        static_cast<double>(stats_after.worker - stats_before.worker),
        static_cast<double>(stats_after.fallback - stats_before.fallback)};
    trainers_.allreduce_sum(origins, timeout);
    report.local_batches = static_cast<std::size_t>(origins[0]);
    report.worker_batches = static_cast<std::size_t>(origins[1]);
    report.fallback_batches = static_cast<std::size_t>(origins[2]);
    if (audit) {
      audit->check_epoch(epoch, trainers_, timeout);
      report.audited = true;
    }
    report.test_loss = report.test_accuracy = std::numeric_limits<double>::quiet_NaN();
    if (cfg.eval) {
      const auto eval_start = Clock::now();
      const EvalResult eval = evaluate();
      report.eval_seconds = seconds_since(eval_start);
      report.test_loss = eval.loss;
      report.test_accuracy = eval.accuracy;
      summary.final_test_accuracy = eval.accuracy;
    }
    report.elapsed_seconds = seconds_since(train_start);
    for (auto* cb : callbacks) cb->on_epoch_end(report);
  }
  summary.total_seconds = seconds_since(train_start);
  loader->finish();
  report_data_service(loader->stats());
  summary.digest = model::weights_digest(model_);
  check_replicas_agree(summary.digest);
  for (auto* cb : callbacks) cb->on_train_end(model_, summary);
  return summary;
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
    const auto result = model::softmax_cross_entropy(model_.forward(images), labels, 0, nullptr);
    sums[0] += result.loss_sum;
    sums[1] += result.correct;
  }
  trainers_.allreduce_sum(sums, std::chrono::duration<double>(config_.cluster().peer_timeout_s));
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
