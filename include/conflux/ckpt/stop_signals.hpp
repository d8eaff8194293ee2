#pragma once
/// @file stop_signals.hpp
/// SIGUSR1, SIGTERM and SIGINT ask conflux to checkpoint at the next step boundary and exit
/// with code 75 (requeue me), instead of dying with the work since the last checkpoint.

namespace conflux::ckpt {

/// While alive, catches SIGUSR1, SIGTERM and SIGINT and records the first one received. Every
/// stop signal after the first is counted and otherwise harmless: schedulers send TERM after
/// USR1 at a time limit, and mpirun forwards repeats, so a second signal must not turn exit 75
/// into death by signal (SIGKILL is the way to kill at once). On destruction the previous
/// handlers come back, unless a signal was received or the owner said the process ends with
/// the watch (AtEnd::kIgnore): then the three stay ignored, so a late signal cannot kill a
/// process on its way out. At most one instance exists at a time, because a signal handler can
/// only reach process-wide state.
class StopSignals {
 public:
  /// What the three signals do once the watch ends.
  enum class AtEnd {
    kRestore,  ///< the previous handlers, unless a signal was received (then ignored)
    kIgnore,   ///< ignored: the process exits next, and a rank whose job was stopped by a
               ///< signal to another rank may still get its own copy (SLURM signals each node)
  };
  /// Installs the handlers; RuntimeError if another instance is alive or sigaction fails.
  explicit StopSignals(AtEnd at_end = AtEnd::kRestore);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The first signal caught since construction, or 0.
  int received() const noexcept;
  /// Stop signals caught after the first (each ignored).
  int repeats() const noexcept;
  /// "SIGUSR1", "SIGTERM", "SIGINT" or "signal N".
  static const char* name(int signal) noexcept;

 private:
  AtEnd at_end_;
};

}  // namespace conflux::ckpt
