#pragma once
/// @file handles.hpp
/// Move-only RAII owners of CUDA resources: Stream, Event, DeviceBuffer<T> (cudaMalloc),
/// PinnedBuffer<T> (cudaMallocHost), CublasHandle and NcclCommunicator, plus typed copy helpers.
/// CUDA builds only; usable from g++ and nvcc code alike. Constructors and operations throw
/// RuntimeError on CUDA errors; destructors never throw (an error while releasing, e.g. at process
/// exit after the driver has shut down, is ignored).
///
/// Every resource belongs to the device that was current when it was created; use it with that
/// device current (gpu::use_device).

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/handles.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <memory_resource>
#include <span>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cublas_api.hpp"
#include "conflux/gpu/cudnn_api.hpp"
#include "conflux/gpu/runtime.hpp"

namespace conflux::gpu {

class Event;

/// A CUDA stream created with cudaStreamNonBlocking: it does not synchronise with the legacy
/// default stream, so work on it overlaps work on other streams.
class Stream {
 public:
  Stream() { CONFLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// The raw handle, for kernel launches and library calls.
  cudaStream_t get() const noexcept { return stream_; }
  /// Blocks until all work enqueued so far has finished.
  void synchronize() const { CONFLUX_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  /// Makes later work on this stream wait until `event` (recorded on any stream) has happened.
  inline void wait(const Event& event) const;

 private:
  cudaStream_t stream_ = nullptr;
};

/// A CUDA event, without timing unless asked for (cheaper to record and wait on).
class Event {
 public:
  explicit Event(bool timing = false) {
    CONFLUX_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (event_ != nullptr) static_cast<void>(cudaEventDestroy(event_));
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const noexcept { return event_; }
  /// Captures the work enqueued on `stream` so far.
  void record(cudaStream_t stream) { CONFLUX_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  /// Blocks until the captured work has finished.
  void synchronize() const { CONFLUX_CUDA_CHECK(cudaEventSynchronize(event_)); }
  /// Whether the captured work has finished (never blocks).
  bool ready() const {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) {
      static_cast<void>(cudaGetLastError());  // not an error; do not leave it pending
      return false;
    }
    CONFLUX_CUDA_CHECK(status);
    return true;
  }
  /// Milliseconds from `start` to this event; both need timing = true and must have finished.
  float elapsed_ms_since(const Event& start) const {
    float ms = 0.0f;
    CONFLUX_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

inline void Stream::wait(const Event& event) const {
  CONFLUX_CUDA_CHECK(cudaStreamWaitEvent(stream_, event.get(), 0));
}

/// `count` elements of T in device memory (cudaMalloc; contents uninitialised). Empty buffers
/// hold a null pointer and allocate nothing.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count > 0) {
      void* p = nullptr;
      const cudaError_t status = cudaMalloc(&p, count * sizeof(T));
      // Counted even when it fails: while a graph is captured, that failure is the capture's.
      count_device_memory(status == cudaSuccess ? static_cast<std::ptrdiff_t>(bytes()) : 0);
      CONFLUX_CUDA_CHECK(status);
      data_ = static_cast<T*>(p);
    }
  }
  ~DeviceBuffer() {
    if (data_ == nullptr) return;
    static_cast<void>(cudaFree(data_));
    count_device_memory(-static_cast<std::ptrdiff_t>(bytes()));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  bool empty() const noexcept { return count_ == 0; }

  /// Sets every byte to zero, in stream order.
  void zero(cudaStream_t stream) {
    if (count_ > 0) CONFLUX_CUDA_CHECK(cudaMemsetAsync(data_, 0, bytes(), stream));
  }
  /// Copies host memory in, in stream order (truly asynchronous only from pinned memory).
  void copy_from_host(std::span<const T> host, cudaStream_t stream) {
    CONFLUX_CHECK(host.size() == count_, "DeviceBuffer: copying {} elements into {}", host.size(),
                  count_);
    if (count_ > 0) {
      CONFLUX_CUDA_CHECK(
          cudaMemcpyAsync(data_, host.data(), bytes(), cudaMemcpyHostToDevice, stream));
    }
  }
  /// Copies out to host memory, in stream order; synchronise before reading `host`.
  void copy_to_host(std::span<T> host, cudaStream_t stream) const {
    CONFLUX_CHECK(host.size() == count_, "DeviceBuffer: copying {} elements into {}", count_,
                  host.size());
    if (count_ > 0) {
      CONFLUX_CUDA_CHECK(
          cudaMemcpyAsync(host.data(), data_, bytes(), cudaMemcpyDeviceToHost, stream));
    }
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// `count` elements of T in page-locked host memory (cudaMallocHost), the source or target of
/// truly asynchronous copies; contents uninitialised.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count > 0) {
      void* p = nullptr;
      CONFLUX_CUDA_CHECK(cudaMallocHost(&p, count * sizeof(T)));
      data_ = static_cast<T*>(p);
    }
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) static_cast<void>(cudaFreeHost(data_));
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::span<T> span() noexcept { return {data_, count_}; }
  std::span<const T> span() const noexcept { return {data_, count_}; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// Page-locked host memory of one device as a std::pmr::memory_resource (cudaMallocHost per
/// allocation, page-aligned): where a GPU trainer's batches are built and received, so that
/// their uploads are truly asynchronous. The loader reuses its buffers, so allocations are
/// rare. Allocates with `device` current, so a preprocessing thread never creates a context
/// on another GPU.
class PinnedMemory final : public std::pmr::memory_resource {
 public:
  explicit PinnedMemory(int device) noexcept : device_(device) {}

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    CONFLUX_CHECK(alignment <= 4096, "pinned memory: alignment {} above a page", alignment);
    CONFLUX_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    CONFLUX_CUDA_CHECK(cudaMallocHost(&p, bytes > 0 ? bytes : 1));
    return p;
  }
  void do_deallocate(void* p, std::size_t, std::size_t) override {
    static_cast<void>(cudaFreeHost(p));
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  int device_;
};

/// An instantiated CUDA graph (cudaGraphExec_t) of work captured on a stream, replayed by
/// launch(); what it reads and writes are the addresses of the capture.
class GraphExec {
 public:
  /// Instantiates `graph` (the caller keeps and destroys it).
  explicit GraphExec(cudaGraph_t graph) {
    CONFLUX_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
  }
  ~GraphExec() {
    if (exec_ != nullptr) static_cast<void>(cudaGraphExecDestroy(exec_));
  }
  GraphExec(GraphExec&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& other) noexcept {
    std::swap(exec_, other.exec_);
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  /// Enqueues the whole graph on `stream`.
  void launch(cudaStream_t stream) { CONFLUX_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

/// A cuBLAS handle. FP32 GEMMs run in CUBLAS_DEFAULT_MATH: full FP32 precision, no TF32. The
/// first one loads cuBLAS (cublas_api.hpp).
class CublasHandle {
 public:
  CublasHandle() {
    CONFLUX_CUBLAS_CHECK(cublas().create(&handle_));
    CONFLUX_CUBLAS_CHECK(cublas().set_math_mode(handle_, CUBLAS_DEFAULT_MATH));
  }
  /// A handle whose calls run on `stream`.
  explicit CublasHandle(cudaStream_t stream) : CublasHandle() { set_stream(stream); }
  ~CublasHandle() {
    if (handle_ != nullptr) static_cast<void>(cublas().destroy(handle_));
  }
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const noexcept { return handle_; }
  void set_stream(cudaStream_t stream) {
    CONFLUX_CUBLAS_CHECK(cublas().set_stream(handle_, stream));
  }

 private:
  cublasHandle_t handle_ = nullptr;
};

/// An NCCL communicator (ncclCommInitRank on the current device; ncclCommDestroy on release).
class NcclCommunicator {
 public:
  NcclCommunicator() = default;
  /// Joins as rank `rank` of `ranks` the clique that `id` (from ncclGetUniqueId on one rank,
  /// shared with all) names. Collective and blocking: every rank must call it.
  NcclCommunicator(int ranks, const ncclUniqueId& id, int rank) {
    CONFLUX_NCCL_CHECK(ncclCommInitRank(&comm_, ranks, id, rank));
  }
  ~NcclCommunicator() {
    if (comm_ != nullptr) static_cast<void>(ncclCommDestroy(comm_));
  }
  NcclCommunicator(NcclCommunicator&& other) noexcept
      : comm_(std::exchange(other.comm_, nullptr)) {}
  NcclCommunicator& operator=(NcclCommunicator&& other) noexcept {
    std::swap(comm_, other.comm_);
    return *this;
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  ncclComm_t get() const noexcept { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};

/// Copies `count` elements host -> device in stream order.
template <class T>
void copy_to_device(T* device_dst, const T* host_src, std::size_t count, cudaStream_t stream) {
  if (count > 0) {
    CONFLUX_CUDA_CHECK(
        cudaMemcpyAsync(device_dst, host_src, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
}

/// Copies `count` elements device -> host in stream order; synchronise before reading.
template <class T>
void copy_to_host(T* host_dst, const T* device_src, std::size_t count, cudaStream_t stream) {
  if (count > 0) {
    CONFLUX_CUDA_CHECK(
        cudaMemcpyAsync(host_dst, device_src, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
}

/// Copies `count` elements device -> device in stream order.
template <class T>
void copy_on_device(T* device_dst, const T* device_src, std::size_t count, cudaStream_t stream) {
  if (count > 0) {
    CONFLUX_CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, count * sizeof(T),
                                       cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace conflux::gpu

namespace conflux::gpu {

/// A cuDNN handle (cudnnCreate, on the current device; its calls run on the legacy default stream
/// until set_stream). The first one loads cuDNN (cudnn_api.hpp). Not for concurrent use by
/// several host threads.
class CudnnHandle {
 public:
  CudnnHandle() { CONFLUX_CUDNN_CHECK(cudnn().create(&handle_)); }
  /// A handle whose calls run on `stream`.
  explicit CudnnHandle(cudaStream_t stream) : CudnnHandle() { set_stream(stream); }
  ~CudnnHandle() {
    if (handle_ != nullptr) static_cast<void>(cudnn().destroy(handle_));
  }
  CudnnHandle(CudnnHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CudnnHandle& operator=(CudnnHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;

  cudnnHandle_t get() const noexcept { return handle_; }
  void set_stream(cudaStream_t stream) { CONFLUX_CUDNN_CHECK(cudnn().set_stream(handle_, stream)); }

 private:
  cudnnHandle_t handle_ = nullptr;
};

}  // namespace conflux::gpu
