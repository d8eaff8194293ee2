#pragma once
/// @file resume.hpp
/// Choosing the checkpoint a run continues from (checkpoint.resume) and checking that it
/// belongs to the same training problem.

#include <optional>
#include <string>

#include "conflux/ckpt/checkpoint_store.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// The checkpoint to continue from: nothing for "none"; for "auto" the newest valid one in
/// checkpoint.dir (each corrupt one skipped is logged), nothing when there is none; for a
/// path that file (CorruptCheckpoint, exit 2, when it is unusable). Runs on one rank.
std::optional<ckpt::FoundCheckpoint> find_resume_checkpoint(const Config& config,
                                                            const Logger& log);

/// InputError (exit 2) when `state` was made by a run that trains something else: another
/// dataset size, seed, batch size, optimiser, schedule, augmentation or layer list. The
/// number of trainer and worker ranks may differ; train.epochs may grow under a constant
/// learning rate.
void check_resume_compatible(const Config& config, const ckpt::TrainingState& state,
                             const std::string& source);

}  // namespace conflux::train
