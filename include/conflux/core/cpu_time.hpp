#pragma once
/// @file cpu_time.hpp
/// CPU time of the whole process (every thread), for CPU-share accounting and statistics.

namespace conflux {

/// User + system CPU time of this process so far, all threads, in seconds.
double process_cpu_seconds();

}  // namespace conflux
