#pragma once
/// @file cpu_throttle.hpp
/// Lambda-like CPU share for the whole process on a plain machine, without privileges: a
/// controller thread keeps the process's CPU time at `share` vCPUs of wall time (CFS-bandwidth
/// style, over periods) by pausing every other thread of the process with a signal whose
/// handler sleeps until the budget allows them to run again.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace conflux {

/// Settings of a CpuThrottle.
struct CpuThrottleOptions {
  double share = 1.0;  ///< vCPUs the process may use (e.g. memory_mb / 1769); > 0
  /// Accounting period: the process may run ahead of its budget by at most one period's
  /// worth of CPU time (CFS bandwidth control uses 100 ms; Lambda-sized steps want less).
  std::chrono::duration<double> period{0.02};
};

/// What the throttle did so far.
struct CpuThrottleStats {
  double cpu_seconds = 0;     ///< process CPU time since the throttle started (or set_share)
  double wall_seconds = 0;    ///< wall time over the same span
  double paused_seconds = 0;  ///< time the other threads were held
  std::uint64_t pauses = 0;   ///< times they were held
};

/// Holds the process to a CPU share while alive (RAII). One per process: a second one is a
/// runtime error. Threads created later are throttled too.
class CpuThrottle {
 public:
  /// Starts throttling; RuntimeError when another throttle is active or share <= 0.
  explicit CpuThrottle(CpuThrottleOptions options);
  ~CpuThrottle();
  CpuThrottle(const CpuThrottle&) = delete;
  CpuThrottle& operator=(const CpuThrottle&) = delete;

  /// Changes the share and restarts the accounting (for sweeps over memory sizes).
  void set_share(double share);
  /// The current share in vCPUs.
  double share() const;
  /// CPU, wall and paused time since the start or the last set_share().
  CpuThrottleStats stats() const;

 private:
  void control_loop();
  void pause_others_until(std::chrono::steady_clock::time_point until);

  CpuThrottleOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point start_wall_;
  double start_cpu_ = 0;
  double paused_seconds_ = 0;
  std::uint64_t pauses_ = 0;
  std::thread controller_;
};

}  // namespace conflux
