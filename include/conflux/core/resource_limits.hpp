#pragma once
/// @file resource_limits.hpp
/// A Lambda-like function size for one rank: M MB of memory buys M / mb_per_vcpu vCPUs.
/// Applied on a plain machine by capping the process's data segment at M MiB (RLIMIT_DATA:
/// heap and private mappings, where a rank's memory goes) and throttling its CPU time to the
/// share (CpuThrottle), so that profiles at several sizes can be measured on one node.

#include <memory>
#include <string>

#include "conflux/core/cpu_throttle.hpp"

namespace conflux {

/// The size of a Lambda-like function.
struct FunctionSize {
  int memory_mb = 0;          ///< MB (Lambda's MB are MiB); 128..10240 on Lambda
  double mb_per_vcpu = 1769;  ///< memory that buys one vCPU
  /// vCPUs the memory buys.
  double cpu_share() const { return memory_mb / mb_per_vcpu; }
  /// "1024 MB (0.58 vCPU)".
  std::string describe() const;
};

/// This process's peak resident set size so far, in bytes (getrusage's ru_maxrss).
std::uint64_t peak_rss_bytes() noexcept;

/// Holds this process to a function size while alive (RAII); restores the memory limit after.
class ResourceLimits {
 public:
  /// Caps memory and starts the CPU throttle; RuntimeError when the limit cannot be set.
  ResourceLimits(FunctionSize size, std::chrono::duration<double> cpu_period);
  ~ResourceLimits();
  ResourceLimits(const ResourceLimits&) = delete;
  ResourceLimits& operator=(const ResourceLimits&) = delete;

  /// Moves to another size (memory cap and CPU share), restarting the CPU accounting.
  void resize(FunctionSize size);
  /// The size in force.
  const FunctionSize& size() const noexcept { return size_; }
  /// The CPU throttle (for its statistics).
  const CpuThrottle& throttle() const noexcept { return *throttle_; }

 private:
  void cap_memory(int memory_mb) const;

  FunctionSize size_;
  unsigned long long original_soft_ = 0;  // RLIMIT_DATA soft limit before
  std::unique_ptr<CpuThrottle> throttle_;
};

}  // namespace conflux
