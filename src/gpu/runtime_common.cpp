// The parts of gpu/runtime.hpp that need no CUDA: both builds compile this file.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "conflux/core/error.hpp"
#include "conflux/gpu/runtime.hpp"

namespace conflux::gpu {
namespace {

// Process-wide by nature: the device memory a process holds.
std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};
std::atomic<std::uint64_t> g_changes{0};

}  // namespace

DeviceMemoryStats device_memory_stats() noexcept {
  return {.live_bytes = g_live.load(), .peak_bytes = g_peak.load(), .changes = g_changes.load()};
}

void reset_device_memory_peak() noexcept {
  g_peak.store(g_live.load());
}

void count_device_memory(std::ptrdiff_t bytes) noexcept {
  g_changes.fetch_add(1);
  if (bytes < 0) {
    g_live.fetch_sub(static_cast<std::size_t>(-bytes));
    return;
  }
  const std::size_t live =
      g_live.fetch_add(static_cast<std::size_t>(bytes)) + static_cast<std::size_t>(bytes);
  std::size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

int select_device(int node_local_rank, int devices) {
  CONFLUX_CHECK(devices > 0, "select_device: no GPU to choose from ({} devices)", devices);
  CONFLUX_CHECK(node_local_rank >= 0, "select_device: node-local rank {} < 0", node_local_rank);
  return node_local_rank % devices;
}

std::string describe(const DeviceInfo& info) {
  return fmt::format("GPU {}: {} (sm_{}{}, {} SMs, {:.1f} GiB, PCI {})", info.index, info.name,
                     info.compute_major, info.compute_minor, info.multiprocessors,
                     static_cast<double>(info.total_memory) / (1024.0 * 1024.0 * 1024.0),
                     info.pci_bus_id);
}

}  // namespace conflux::gpu
