// GPU runtime: probing (runs everywhere, never throws), device selection, device queries, the
// RAII handles and the error-check macros.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/runtime.hpp"
#include "gpu_test_support.hpp"

#if CONFLUX_HAVE_CUDA
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/handles.hpp"
#endif

namespace conflux::gpu {
namespace {

TEST(GpuRuntime, ProbeNeverThrowsAndExplainsZeroDevices) {
  GpuProbe probe;
  EXPECT_NO_THROW(probe = probe_gpus());
  EXPECT_GE(probe.devices, 0);
  if (probe.devices == 0) {
    // E.g. on a machine with the CUDA toolkit but no driver:
    // "no CUDA driver, or one too old for this CUDA runtime: cudaErrorInsufficientDriver (...)".
    EXPECT_FALSE(probe.reason.empty());
  } else {
    EXPECT_TRUE(probe.reason.empty()) << probe.reason;
  }
  if (!built_with_cuda()) {
    EXPECT_EQ(probe.devices, 0);
    EXPECT_NE(probe.reason.find("built without CUDA"), std::string::npos) << probe.reason;
  }
  // Twice in a row gives the same answer (no error state left behind).
  const GpuProbe again = probe_gpus();
  EXPECT_EQ(again.devices, probe.devices);
  EXPECT_EQ(again.reason, probe.reason);
}

TEST(GpuRuntime, SelectDeviceIsRoundRobinOverVisibleDevices) {
  EXPECT_EQ(select_device(0, 1), 0);
  EXPECT_EQ(select_device(3, 1), 0);  // one visible device per task (--gpus-per-task=1)
  const std::vector<int> want{0, 1, 2, 3, 0, 1, 2, 3, 0};
  for (int rank = 0; rank < static_cast<int>(want.size()); ++rank)
    EXPECT_EQ(select_device(rank, 4), want[rank]) << rank;
  EXPECT_THROW(select_device(0, 0), RuntimeError);
  EXPECT_THROW(select_device(-1, 2), RuntimeError);
}

TEST(GpuRuntime, DeviceCallsThrowWithoutGpu) {
  if (probe_gpus().devices > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(use_device(0), RuntimeError);
  EXPECT_THROW(device_info(0), RuntimeError);
}

TEST(GpuRuntime, DeviceInfoDescribesEveryDevice) {
  CONFLUX_REQUIRE_GPU();
  const int devices = probe_gpus().devices;
  for (int d = 0; d < devices; ++d) {
    const DeviceInfo info = device_info(d);
    EXPECT_EQ(info.index, d);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GT(info.total_memory, 0u);
    EXPECT_GT(info.multiprocessors, 0);
    EXPECT_NE(describe(info).find(info.name), std::string::npos);
  }
  use_device(devices - 1);
  EXPECT_EQ(current_device(), devices - 1);
  const MemoryInfo memory = memory_info();
  EXPECT_GT(memory.total_bytes, 0u);
  EXPECT_LE(memory.free_bytes, memory.total_bytes);
  use_device(0);
}

TEST(GpuRuntime, DescribeFormatsALogLine) {
  const DeviceInfo info{.index = 1,
                        .name = "NVIDIA H200",
                        .compute_major = 9,
                        .compute_minor = 0,
                        .multiprocessors = 132,
                        .total_memory = std::size_t{150} << 30,
                        .pci_bus_id = "0000:19:00.0"};
  EXPECT_EQ(describe(info), "GPU 1: NVIDIA H200 (sm_90, 132 SMs, 150.0 GiB, PCI 0000:19:00.0)");
}

#if CONFLUX_HAVE_CUDA

TEST(GpuRuntime, CheckMacrosThrowRuntimeErrorNamingTheCall) {
  // No device needed: the macros only look at the returned status.
  try {
    CONFLUX_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no exception";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaErrorInvalidValue failed: cudaErrorInvalidValue"), std::string::npos)
        << what;
    EXPECT_NE(std::string(e.file()).find("runtime_test.cpp"), std::string::npos);
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
  }
  try {
    CONFLUX_CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
    FAIL() << "no exception";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos)
        << e.what();
  }
  try {
    CONFLUX_NCCL_CHECK(ncclInvalidArgument);
    FAIL() << "no exception";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL error"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(CONFLUX_CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(CONFLUX_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_NO_THROW(CONFLUX_NCCL_CHECK(ncclSuccess));
}

TEST(GpuRuntime, HandlesAllocateCopyAndMove) {
  CONFLUX_REQUIRE_GPU();
  Stream stream;
  std::vector<float> host(1000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  DeviceBuffer<float> a(host.size());
  EXPECT_EQ(a.bytes(), host.size() * sizeof(float));
  a.copy_from_host(host, stream.get());
  DeviceBuffer<float> b = std::move(a);  // moved-from a is empty
  EXPECT_TRUE(a.empty());                // NOLINT(bugprone-use-after-move)
  PinnedBuffer<float> pinned(host.size());
  Event copied(true);
  Event start(true);
  start.record(stream.get());
  b.copy_to_host(pinned.span(), stream.get());
  copied.record(stream.get());
  copied.synchronize();
  EXPECT_TRUE(copied.ready());
  EXPECT_GE(copied.elapsed_ms_since(start), 0.0f);
  EXPECT_EQ(std::vector<float>(pinned.span().begin(), pinned.span().end()), host);
  b.zero(stream.get());
  b.copy_to_host(pinned.span(), stream.get());
  stream.synchronize();
  EXPECT_EQ(pinned.data()[999], 0.0f);

  // A second stream waits on an event of the first.
  Stream other;
  Event done;
  DeviceBuffer<float> c(host.size());
  copy_on_device(c.data(), b.data(), host.size(), stream.get());
  done.record(stream.get());
  other.wait(done);
  c.copy_to_host(pinned.span(), other.get());
  other.synchronize();
  EXPECT_EQ(pinned.data()[10], 0.0f);

  CublasHandle blas(stream.get());
  EXPECT_NE(blas.get(), nullptr);
  EXPECT_THROW(DeviceBuffer<float>(std::size_t{1} << 50), RuntimeError);  // 4 PiB
}

#endif  // CONFLUX_HAVE_CUDA

}  // namespace
}  // namespace conflux::gpu
