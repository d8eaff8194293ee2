#pragma once
/// @file stop_signals.hpp
/// SIGUSR1, SIGTERM and SIGINT ask conflux to checkpoint at the next step boundary and exit
/// with code 75 (requeue me), instead of dying with the work since the last checkpoint.

namespace conflux::ckpt {

/// While alive, catches SIGUSR1, SIGTERM and SIGINT and records the first one received; the
/// previous handlers come back on destruction. A second SIGTERM or SIGINT gets the default
/// action (a second Ctrl-C still kills). At most one instance exists at a time, because a
/// signal handler can only reach process-wide state.
class StopSignals {
 public:
  /// Installs the handlers; RuntimeError if another instance is alive or sigaction fails.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The first signal caught since construction, or 0.
  int received() const noexcept;
  /// "SIGUSR1", "SIGTERM", "SIGINT" or "signal N".
  static const char* name(int signal) noexcept;
};

}  // namespace conflux::ckpt
