#pragma once
/// @file busy_meter.hpp
/// How busy a worker has been lately: the share of a sliding window of wall time covered by
/// its busy intervals (the "busy fraction" of the profiler).

#include <deque>
#include <utility>

#include "conflux/core/elapsed.hpp"

namespace conflux {

/// Busy fraction over the last `window` of wall time.
class BusyMeter {
 public:
  /// Measures over the last `window_seconds` (> 0).
  explicit BusyMeter(double window_seconds = 2.0);
  /// Records that the owner was busy from `start` to `end` (intervals in time order).
  void record(SteadyClock::time_point start, SteadyClock::time_point end);
  /// Share of [now - window, now] (or of the time since the first interval, if shorter) that
  /// was busy, in [0, 1].
  double busy_fraction(SteadyClock::time_point now);

 private:
  void forget_before(SteadyClock::time_point limit);
  SteadyClock::duration window_;
  std::deque<std::pair<SteadyClock::time_point, SteadyClock::time_point>> intervals_;
  SteadyClock::time_point first_{};
};

}  // namespace conflux
