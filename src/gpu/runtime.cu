// gpu/runtime.hpp and the error helpers of gpu/check.hpp in the CUDA build.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdlib>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cublas_api.hpp"
#include "conflux/gpu/runtime.hpp"

namespace conflux::gpu {
namespace detail {

void throw_cuda_error(const char* call, cudaError_t error, const char* file, int line) {
  static_cast<void>(cudaGetLastError());  // a non-sticky error must not fail the next check
  throw RuntimeError(
      fmt::format("{} failed: {} ({})", call, cudaGetErrorName(error), cudaGetErrorString(error)),
      file, line);
}

void throw_cublas_error(const char* call, cublasStatus_t status, const char* file, int line) {
  // cuBLAS is loaded at run time (cublas_api.hpp); when it cannot be, only the number is known.
  std::string what;
  try {
    const CublasApi& api = cublas();
    what = fmt::format("{} ({})", api.status_name(status), api.status_string(status));
  } catch (const Error&) {
    what = fmt::format("cuBLAS status {}", static_cast<int>(status));
  }
  throw RuntimeError(fmt::format("{} failed: {}", call, what), file, line);
}

void throw_nccl_error(const char* call, ncclResult_t result, const char* file, int line) {
  throw RuntimeError(fmt::format("{} failed: NCCL error {} ({})", call, static_cast<int>(result),
                                 ncclGetErrorString(result)),
                     file, line);
}

}  // namespace detail

bool built_with_cuda() noexcept {
  return true;
}

GpuProbe probe_gpus() noexcept {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) return {.devices = count, .reason = {}};
    static_cast<void>(cudaGetLastError());
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string visible_note =
        visible != nullptr ? fmt::format(" (CUDA_VISIBLE_DEVICES='{}')", visible) : std::string();
    if (status == cudaSuccess) return {.devices = 0, .reason = "no CUDA device" + visible_note};
    std::string what = fmt::format("{} ({})", cudaGetErrorName(status), cudaGetErrorString(status));
    if (status == cudaErrorInsufficientDriver) {
      what = "no CUDA driver, or one too old for this CUDA runtime: " + what;
    } else if (status == cudaErrorNoDevice) {
      what = "no CUDA device: " + what + visible_note;
    } else {
      what = "cudaGetDeviceCount failed: " + what + visible_note;
    }
    return {.devices = 0, .reason = std::move(what)};
  } catch (...) {  // std::bad_alloc or fmt::format_error: never escape
    return {.devices = 0, .reason = "GPU probe failed"};
  }
}

void use_device(int device) {
  CONFLUX_CUDA_CHECK(cudaSetDevice(device));
}

int current_device() {
  int device = 0;
  CONFLUX_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

DeviceInfo device_info(int device) {
  cudaDeviceProp prop{};
  CONFLUX_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  char bus_id[32] = {};
  CONFLUX_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  return {.index = device,
          .name = prop.name,
          .compute_major = prop.major,
          .compute_minor = prop.minor,
          .multiprocessors = prop.multiProcessorCount,
          .total_memory = prop.totalGlobalMem,
          .pci_bus_id = bus_id};
}

MemoryInfo memory_info() {
  MemoryInfo info;
  CONFLUX_CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
}

}  // namespace conflux::gpu
