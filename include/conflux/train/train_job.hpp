#pragma once
/// @file train_job.hpp
/// `conflux train` on one rank: role split, data loading, training or serving, shutdown.

#include "conflux/ckpt/stop_signals.hpp"
#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// Runs the training job on this rank of `world` (collective over world) and returns the exit
/// code every rank agrees on: kSuccess, or kRequeue when a signal stopped training after a
/// checkpoint. Failures that every rank learns of are raised as comm::AgreedFailure; others
/// as conflux::Error. `signals` (may be null) are the stop signals watched by the trainers.
ExitCode run_train_job(const Config& config, const comm::Communicator& world, const Logger& log,
                       const ckpt::StopSignals* signals);

}  // namespace conflux::train
