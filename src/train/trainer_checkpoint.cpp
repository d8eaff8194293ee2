// The trainer's checkpoint side: continuing from a TrainingState and capturing one.

#include <fmt/ranges.h>

#include "conflux/core/log.hpp"
#include "conflux/offload/remote_schedule.hpp"
#include "conflux/train/trainer.hpp"

namespace conflux::train {

void Trainer::check_restorable(const ckpt::TrainingState& state, const std::string& source) const {
  const auto& infos = backend_->state_infos();
  const auto shape_of = [](const auto& shape) {
    return fmt::format("[{}]", fmt::join(shape, ","));
  };
  bool same = state.tensors.size() == infos.size() && state.params.size() == backend_->state_size();
  std::string first_difference =
      fmt::format("{} tensors / {} parameters in the checkpoint, {} / {} in this model",
                  state.tensors.size(), state.params.size(), infos.size(), backend_->state_size());
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
  // Before the optimiser sees the state, so that the error names the checkpoint and the key.
  CONFLUX_REQUIRE(state.optimizer.name == config_.train().optimizer,
                  "checkpoint {} was made with train.optimizer = '{}', but this run has "
                  "train.optimizer = '{}' ({}); resume with the same optimiser or start a new run",
                  source, state.optimizer.name, config_.train().optimizer,
                  config_.where("train.optimizer"));
  CONFLUX_REQUIRE(state.dataset_size == data_.train->size(),
                  "checkpoint {} was made on {} training samples, this run has {}", source,
                  state.dataset_size, data_.train->size());
}

void Trainer::restore(const ckpt::TrainingState& state, const std::string& source) {
  check_restorable(state, source);
  backend_->restore(state.params, state.optimizer);
  progress_.position = {state.epoch, static_cast<std::size_t>(state.step),
                        static_cast<std::size_t>(state.global_step)};
  const auto t = static_cast<std::size_t>(trainers_.rank());
  // With another trainer count the trainers' schedules do not map: each keeps its start ratio.
  if (state.trainers == static_cast<std::uint32_t>(trainers_.size()) && t < state.progress.size()) {
    progress_.offload.restore(state.progress[t].offload);
  }
  progress_.epoch_tally = {state.epoch_loss_sum, state.epoch_correct, state.epoch_samples};
  progress_.epoch_seconds_before = state.epoch_seconds;
  progress_.elapsed_seconds_before = state.elapsed_seconds;
  // The counts are sums over the trainers: one trainer restores them for all.
  if (t == 0) audit_.restored_counts = state.audit_counts;
  if (config_.data().audit && state.audit_counts.empty() && state.step > 0) {
    audit_.unaudited_epoch = state.epoch;
  }
  progress_.metrics = state.metrics;
  progress_.resumed = true;
}

void Trainer::capture(ckpt::TrainingState& s) {
  drain_sync();  // with stale non-aggregators a checkpoint is a sync point
  fold_window();
  const Position& p = progress_.position;
  const auto n_trainers = static_cast<std::size_t>(trainers_.size());
  s.epoch = p.epoch;
  s.step = p.step;
  s.global_step = p.global_step;
  s.steps_per_epoch = loader_->steps_per_epoch();
  s.global_batch = static_cast<std::uint64_t>(config_.train().batch_size);
  s.dataset_size = data_.train->size();
  s.seed = config_.run().seed;
  s.trainers = static_cast<std::uint32_t>(n_trainers);
  s.workers = static_cast<std::uint32_t>(service_.worker_ranks.size());
  // Per-trainer progress: every trainer is at the same step, so trainer i's next batch is
  // step * T + i; the offload schedules are gathered.
  const std::vector<offload::ScheduleState> schedules =
      offload::gather_schedule_states(trainers_, progress_.offload.state(), timeout_);
  s.progress.resize(n_trainers);
  for (std::size_t i = 0; i < n_trainers; ++i) {
    s.progress[i] = {static_cast<std::uint64_t>(p.step * n_trainers + i), schedules[i]};
  }
  s.audit_counts.clear();
  if (audit_.audit) {
    s.audit_counts.assign(audit_.audit->counts().begin(), audit_.audit->counts().end());
    trainers_.allreduce_sum(s.audit_counts, timeout_);
  }
  s.epoch_loss_sum = progress_.epoch_tally.loss;
  s.epoch_correct = progress_.epoch_tally.correct;
  s.epoch_samples = progress_.epoch_tally.samples;
  s.epoch_seconds = progress_.epoch_seconds_before + seconds_since(reporting_.epoch_start);
  s.elapsed_seconds = progress_.elapsed_seconds_before + seconds_since(reporting_.train_start);
  s.created = local_time("%Y-%m-%dT%H:%M:%S");
  s.metrics = progress_.metrics;
  s.lr = backend_->lr();
  if (trainers_.rank() != 0) return;  // the replicas are identical: trainer 0 keeps the one copy
  s.config_toml = config_.resolved_toml();
  s.tensors.clear();
  for (const model::ParamInfo& info : backend_->state_infos()) {
    s.tensors.push_back({info.name, {info.shape.begin(), info.shape.end()}, info.offset});
  }
  backend_->download(s.params, s.optimizer);  // the GPU's state is downloaded
}

}  // namespace conflux::train
