// The parts of gpu/runtime.hpp that need no CUDA: both builds compile this file.

#include <fmt/format.h>

#include "conflux/core/error.hpp"
#include "conflux/gpu/runtime.hpp"

namespace conflux::gpu {

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
