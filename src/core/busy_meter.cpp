#include "conflux/core/busy_meter.hpp"

#include <algorithm>

#include "conflux/core/error.hpp"

namespace conflux {

BusyMeter::BusyMeter(double window_seconds)
    : window_(std::chrono::duration_cast<SteadyClock::duration>(
          std::chrono::duration<double>(window_seconds))) {
  CONFLUX_CHECK(window_seconds > 0, "BusyMeter window must be positive, got {}", window_seconds);
}

void BusyMeter::record(SteadyClock::time_point start, SteadyClock::time_point end) {
  if (end <= start) return;
  if (intervals_.empty() && first_ == SteadyClock::time_point{}) first_ = start;
  intervals_.emplace_back(start, end);
  forget_before(end - window_);
}

void BusyMeter::forget_before(SteadyClock::time_point limit) {
  while (!intervals_.empty() && intervals_.front().second <= limit) intervals_.pop_front();
}

double BusyMeter::busy_fraction(SteadyClock::time_point now) {
  if (first_ == SteadyClock::time_point{} || now <= first_) return 0;
  const SteadyClock::time_point begin = std::max(first_, now - window_);
  forget_before(begin);
  SteadyClock::duration busy{};
  for (const auto& [start, end] : intervals_) {
    busy += std::min(end, now) - std::max(start, begin);
  }
  const double fraction = std::chrono::duration<double>(busy).count() /
                          std::chrono::duration<double>(now - begin).count();
  return std::clamp(fraction, 0.0, 1.0);
}

}  // namespace conflux
