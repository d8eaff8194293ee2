#pragma once
/// @file train_job.hpp
/// `conflux train` on one rank: role split, data loading, training or serving, shutdown.

#include "conflux/comm/communicator.hpp"
#include "conflux/core/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// Runs the training job on this rank of `world` (collective over world). Failures that every
/// rank learns of are raised as comm::AgreedFailure; others as conflux::Error.
void run_train_job(const Config& config, const comm::Communicator& world, const Logger& log);

}  // namespace conflux::train
