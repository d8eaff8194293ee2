#pragma once
/// @file elapsed.hpp
/// Wall-clock intervals for timings and timeouts: the steady clock and seconds since a point.

#include <chrono>
#include <string>

namespace conflux {

/// The clock of all conflux timings (monotonic; unaffected by clock changes).
using SteadyClock = std::chrono::steady_clock;

/// Seconds from `start` until now.
inline double seconds_since(SteadyClock::time_point start) noexcept {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

/// A duration for people: "45s", "3m07s", "2h05m" (negative or NaN: "?").
std::string human_duration(double seconds);

}  // namespace conflux
