#pragma once
/// @file train_job.hpp
/// `conflux train` on one rank: role split, data loading, training or serving, shutdown.

#include "conflux/ckpt/stop_signals.hpp"
#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// How the job ends on this rank.
struct JobEnd {
  ExitCode code = ExitCode::kSuccess;  ///< agreed: kSuccess, or kRequeue after a signal
  /// The run's results are published but some worker stopped answering: the job must end
  /// without the collective exit that worker would never join, i.e. the caller ends every rank
  /// with MPI_Abort(code) (docs/data-service.md, "Shutdown").
  bool leave_lost_workers = false;
};

/// Runs the training job on this rank of `world` (collective over world). Failures that every
/// rank learns of are raised as comm::AgreedFailure; others as conflux::Error. `signals` (may
/// be null) are the stop signals watched by the trainers.
JobEnd run_train_job(const Config& config, const comm::Communicator& world, const Logger& log,
                     const ckpt::StopSignals* signals);

}  // namespace conflux::train
