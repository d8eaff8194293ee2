#include "conflux/core/resource_limits.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "conflux/core/error.hpp"

namespace conflux {

std::string FunctionSize::describe() const {
  return fmt::format("{} MB ({:.2f} vCPU)", memory_mb, cpu_share());
}

ResourceLimits::ResourceLimits(FunctionSize size, std::chrono::duration<double> cpu_period)
    : size_(size) {
  CONFLUX_CHECK(size.memory_mb > 0 && size.mb_per_vcpu > 0, "bad function size {} MB / {} MB",
                size.memory_mb, size.mb_per_vcpu);
  rlimit current{};
  CONFLUX_CHECK(getrlimit(RLIMIT_DATA, &current) == 0, "getrlimit(RLIMIT_DATA): {}",
                std::strerror(errno));
  original_soft_ = current.rlim_cur;
  cap_memory(size.memory_mb);
  throttle_ = std::make_unique<CpuThrottle>(
      CpuThrottleOptions{.share = size.cpu_share(), .period = cpu_period});
}

ResourceLimits::~ResourceLimits() {
  throttle_.reset();
  rlimit current{};
  if (getrlimit(RLIMIT_DATA, &current) == 0) {
    current.rlim_cur = original_soft_;
    setrlimit(RLIMIT_DATA, &current);  // best effort: nothing to do on failure in a destructor
  }
}

void ResourceLimits::resize(FunctionSize size) {
  CONFLUX_CHECK(size.memory_mb > 0 && size.mb_per_vcpu > 0, "bad function size {} MB / {} MB",
                size.memory_mb, size.mb_per_vcpu);
  cap_memory(size.memory_mb);
  throttle_->set_share(size.cpu_share());
  size_ = size;
}

void ResourceLimits::cap_memory(int memory_mb) const {
  rlimit current{};
  CONFLUX_CHECK(getrlimit(RLIMIT_DATA, &current) == 0, "getrlimit(RLIMIT_DATA): {}",
                std::strerror(errno));
  const auto bytes = static_cast<rlim_t>(memory_mb) << 20;
  // Only the soft limit moves, so a later resize() may raise it again.
  current.rlim_cur = current.rlim_max == RLIM_INFINITY ? bytes : std::min(bytes, current.rlim_max);
  CONFLUX_CHECK(setrlimit(RLIMIT_DATA, &current) == 0, "setrlimit(RLIMIT_DATA, {} MiB): {}",
                memory_mb, std::strerror(errno));
}

std::uint64_t peak_rss_bytes() noexcept {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace conflux
