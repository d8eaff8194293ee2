// gpu/runtime.hpp in the CPU-only build (make CUDA=0): no devices, and every device call throws.

#include "conflux/core/error.hpp"
#include "conflux/gpu/runtime.hpp"

namespace conflux::gpu {
namespace {

constexpr const char* kNoCuda = "built without CUDA (rebuild with make CUDA=1, see docs/gpu.md)";

}  // namespace

bool built_with_cuda() noexcept {
  return false;
}

GpuProbe probe_gpus() noexcept {
  try {
    return {.devices = 0, .reason = kNoCuda};
  } catch (...) {  // std::bad_alloc
    return {};
  }
}

void use_device(int /*device*/) {
  CONFLUX_RUNTIME_ERROR("GPU: {}", kNoCuda);
}

int current_device() {
  CONFLUX_RUNTIME_ERROR("GPU: {}", kNoCuda);
}

DeviceInfo device_info(int /*device*/) {
  CONFLUX_RUNTIME_ERROR("GPU: {}", kNoCuda);
}

MemoryInfo memory_info() {
  CONFLUX_RUNTIME_ERROR("GPU: {}", kNoCuda);
}

}  // namespace conflux::gpu
