#pragma once
/// @file runtime.hpp
/// GPU discovery, device selection and device queries. Free of CUDA types, so that code built
/// by g++ includes it in both builds; in a CPU-only build (make CUDA=0) probe_gpus() reports
/// "built without CUDA" and the device calls throw RuntimeError. See docs/gpu.md.

#include <cstddef>
#include <cstdint>
#include <string>

namespace conflux::gpu {

/// Whether this binary was built with CUDA (make CUDA=1).
bool built_with_cuda() noexcept;

/// What probe_gpus() found.
struct GpuProbe {
  int devices = 0;     ///< CUDA devices visible to this process (CUDA_VISIBLE_DEVICES applies)
  std::string reason;  ///< why devices == 0, e.g. "no CUDA driver ..."; empty when devices > 0
};

/// Counts the visible CUDA devices. Never throws: a machine without a GPU, without the driver
/// (cudaErrorInsufficientDriver, error 35) or a CPU-only build gives devices = 0 and a reason.
GpuProbe probe_gpus() noexcept;

/// The device a process with this node-local rank uses: node_local_rank % devices. Ranks are
/// spread round-robin over the devices the process sees; since the CUDA runtime only shows the
/// devices in CUDA_VISIBLE_DEVICES (which SLURM's --gpus-per-task / --gpu-bind set per task), a
/// process that sees one device always gets device 0. RuntimeError when devices <= 0 or
/// node_local_rank < 0. Pure arithmetic: works in both builds.
int select_device(int node_local_rank, int devices);

/// Makes `device` current for the calling thread (cudaSetDevice); RuntimeError on failure or in
/// a CPU-only build.
void use_device(int device);

/// The calling thread's current device; RuntimeError on failure or in a CPU-only build.
int current_device();

/// Static properties of one device, for logs.
struct DeviceInfo {
  int index = 0;
  std::string name;              ///< e.g. "NVIDIA H200"
  int compute_major = 0;         ///< compute capability, e.g. 9 ...
  int compute_minor = 0;         ///< ... and 0 for sm_90
  int multiprocessors = 0;       ///< streaming multiprocessors
  std::size_t total_memory = 0;  ///< bytes
  std::string pci_bus_id;        ///< e.g. "0000:19:00.0"
};

/// Properties of `device` (an index among the visible devices); RuntimeError on failure or in a
/// CPU-only build.
DeviceInfo device_info(int device);

/// One log line: "GPU 0: NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, PCI 0000:19:00.0)".
std::string describe(const DeviceInfo& info);

/// Free and total memory of the current device in bytes.
struct MemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

/// cudaMemGetInfo for the current device; RuntimeError on failure or in a CPU-only build.
MemoryInfo memory_info();

/// Device memory held by this process's DeviceBuffers (all devices together).
struct DeviceMemoryStats {
  std::size_t live_bytes = 0;  ///< held now
  std::size_t peak_bytes = 0;  ///< most held since the start or reset_device_memory_peak()
  /// Allocations plus frees so far: a CUDA graph captured when this was different may point at
  /// freed memory.
  std::uint64_t changes = 0;
};

/// What DeviceBuffers hold: the figure torch.cuda.max_memory_allocated reports for PyTorch
/// (tensors, not the CUDA context or the libraries' own workspaces). Both builds; zeros without
/// CUDA.
DeviceMemoryStats device_memory_stats() noexcept;
/// Starts a new peak at what is held now.
void reset_device_memory_peak() noexcept;
/// DeviceBuffer's accounting: `bytes` allocated (> 0) or freed (< 0); 0 for an allocation that
/// failed (still a change).
void count_device_memory(std::ptrdiff_t bytes) noexcept;

}  // namespace conflux::gpu
