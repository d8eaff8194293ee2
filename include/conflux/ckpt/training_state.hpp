#pragma once
/// @file training_state.hpp
/// Everything a checkpoint holds: enough to continue training exactly where it was taken
/// (docs/design.md invariant 3: the data position is part of every checkpoint).

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/model/optimizer.hpp"
#include "conflux/offload/remote_schedule.hpp"

namespace conflux::ckpt {

/// One named parameter tensor inside the flat parameter buffer.
struct TensorInfo {
  std::string name;                  ///< e.g. "layer1.weight"
  std::vector<std::uint64_t> shape;  ///< e.g. {512, 784}
  std::uint64_t offset = 0;          ///< first float in TrainingState::params
};

/// One trainer's own state (the replicated state is kept once).
struct TrainerProgress {
  std::uint64_t next_batch_index = 0;  ///< epoch-wide index of its next batch (step * T + t)
  offload::ScheduleState offload;      ///< its offload ratio and schedule credit
};

/// The complete state of a training run at a step boundary.
struct TrainingState {
  // Position. All randomness is counter-based (Rng{seed, stream, epoch, sample}), so the
  // position plus the seed is the whole random-number state.
  std::uint32_t epoch = 0;            ///< epoch of the next step
  std::uint64_t step = 0;             ///< next step in that epoch (== steps_per_epoch: the
                                      ///< epoch is trained but its end-of-epoch work is due)
  std::uint64_t global_step = 0;      ///< steps completed over the run
  std::uint64_t steps_per_epoch = 0;  ///< at train.batch_size
  std::uint64_t global_batch = 0;     ///< train.batch_size
  std::uint64_t dataset_size = 0;     ///< training samples
  std::uint64_t seed = 0;             ///< run.seed
  std::uint32_t trainers = 0;         ///< trainer ranks of the run that wrote it
  std::uint32_t workers = 0;          ///< worker ranks of the run that wrote it

  // Model and optimiser (identical on every trainer).
  std::vector<TensorInfo> tensors;
  std::vector<float> params;
  model::OptimizerState optimizer;  ///< which optimiser, its step count and buffers
  double lr = 0;                    ///< learning rate of the last step (informational)

  std::vector<TrainerProgress> progress;  ///< one per trainer

  // Accounting of the epoch in progress (sums over trainers) and of the run.
  double epoch_loss_sum = 0;
  double epoch_correct = 0;
  double epoch_samples = 0;
  double epoch_seconds = 0;          ///< training time spent in this epoch so far
  double elapsed_seconds = 0;        ///< training time since the run began (all launches)
  std::vector<double> audit_counts;  ///< data.audit: uses of each sample this epoch; else empty

  // The run record.
  std::string config_toml;           ///< resolved config the run was started with
  std::vector<std::string> metrics;  ///< metrics.jsonl lines of the finished epochs
  std::string created;               ///< ISO-8601 local time the state was captured
};

}  // namespace conflux::ckpt
