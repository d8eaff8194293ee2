#include "conflux/core/cpu_time.hpp"

#include <time.h>

#include <cerrno>

#include "conflux/core/error.hpp"

namespace conflux {

double process_cpu_seconds() {
  timespec ts{};
  CONFLUX_CHECK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0, "clock_gettime failed: errno {}",
                errno);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace conflux
