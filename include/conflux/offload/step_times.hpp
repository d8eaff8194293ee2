#pragma once
/// @file step_times.hpp
/// Where one training step's time went: the training loop measures it, the window meter adds
/// it up.

namespace conflux::offload {

/// Where one training step's time went, in seconds.
struct StepTimes {
  double data_wait = 0;  ///< waiting for the batch
  double compute = 0;    ///< forward, backward, optimiser
  double sync = 0;       ///< gradient allreduce
  double callbacks = 0;  ///< callbacks of the previous step (checkpoint stall, profiler, ...)
};

}  // namespace conflux::offload
