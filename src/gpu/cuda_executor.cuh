#pragma once
// The CUDA executor of the device kernels (gpu/device_layer.hpp): element functions become
// grid-stride kernels, GEMMs cublasSgemm calls, convolutions cuDNN's (one algorithm choice per
// shape, cached; one shared workspace), all on one stream. Included by .cu files only.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cublas_api.hpp"
#include "conflux/gpu/cudnn_conv.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/runtime.hpp"
#include "lt_gemms.cuh"

namespace conflux::gpu {
namespace detail {

inline constexpr int kThreadsPerBlock = 256;
// Grid-stride loops cover any count; 8192 blocks of 256 threads fill an H200 (132 SMs) several
// times over.
inline constexpr std::size_t kMaxBlocks = 8192;

template <class F>
__global__ void __launch_bounds__(kThreadsPerBlock) for_each_kernel(std::size_t count, F f) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    f(i);
  }
}

// A GEMM epilogue cuBLASLt did not take, in two kernels around a plain GEMM: the bias in C
// first (the GEMM adds the product onto it, beta 1: one rounding, as the epilogue's), the ReLU
// after. Column-major m x n C with leading dimension ldc.
template <class T>
struct BiasIntoRows {
  T* c;
  const T* bias;
  std::size_t m, ldc;
  CONFLUX_HD void operator()(std::size_t i) const {
    store(c, i % m + i / m * ldc, load(bias, i % m));
  }
};
template <class T>
struct ReluInPlace {
  T* c;
  std::size_t m, ldc;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t at = i % m + i / m * ldc;
    const float v = load(c, at);
    store(c, at, v > 0.0f ? v : 0.0f);
  }
};

}  // namespace detail

/// Runs everything on `stream` of the current device; owns the cuBLAS and cuDNN handles bound
/// to it and the convolutions' workspace.
class CudaExecutor {
 public:
  /// cuBLAS's workspace: what PyTorch gives it on Hopper (CUBLAS_WORKSPACE_CONFIG=:4096:8).
  static constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;
  template <class T>
  using Buffer = DeviceBuffer<T>;

  /// `conv`: how fp32 convolutions compute (fp32 or TF32), whether deterministically, and the
  /// workspace bound; bf16 calls use bf16 with the same bounds.
  CudaExecutor(cudaStream_t stream, const ConvOptions& conv)
      : stream_(stream),
        conv_(conv),
        blas_(),
        dnn_(stream),
        convs_(dnn_.get(), conv),
        blas_workspace_(kCublasWorkspaceBytes),
        lt_(conv.precision == Precision::kTf32) {
    CONFLUX_CUBLAS_CHECK(cublas().set_stream(blas_.get(), stream_));
    // A workspace of our own (after set_stream, which resets it): cuBLAS then never allocates
    // in a call, which a captured step graph could not hold.
    CONFLUX_CUBLAS_CHECK(
        cublas().set_workspace(blas_.get(), blas_workspace_.data(), blas_workspace_.bytes()));
    // Full FP32 products unless TF32 is asked for (cuDNN's math type follows the precision).
    CONFLUX_CUBLAS_CHECK(cublas().set_math_mode(blas_.get(), conv.precision == Precision::kTf32
                                                                 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                 : CUBLAS_DEFAULT_MATH));
  }

  cudaStream_t stream() const noexcept { return stream_; }

  template <class F>
  void for_each(std::size_t count, const F& f) {
    if (count == 0) return;
    const std::size_t blocks = std::min<std::size_t>(
        (count + detail::kThreadsPerBlock - 1) / detail::kThreadsPerBlock, detail::kMaxBlocks);
    detail::
        for_each_kernel<<<static_cast<unsigned>(blocks), detail::kThreadsPerBlock, 0, stream_>>>(
            count, f);
    CONFLUX_CUDA_CHECK_LAUNCH();
  }

  void gemm(const Gemm& g) {
    if (g.m == 0 || g.n == 0) return;
    if (g.bias != nullptr || g.relu) {
      gemm_with_epilogue(g);
      return;
    }
    const float one = 1.0f;
    const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (g.a_type == DType::kF32 && g.c_type == DType::kF32) {
      CONFLUX_CUBLAS_CHECK(cublas().sgemm(
          blas_.get(), ta, tb, g.m, g.n, g.k, &one, static_cast<const float*>(g.a), g.lda,
          static_cast<const float*>(g.b), g.ldb, &g.beta, static_cast<float*>(g.c), g.ldc));
      return;
    }
    // bf16 products on tensor cores, accumulated in fp32; C in bf16 or fp32.
    const auto type = [](DType t) { return t == DType::kBf16 ? CUDA_R_16BF : CUDA_R_32F; };
    CONFLUX_CUBLAS_CHECK(cublas().gemm_ex(
        blas_.get(), ta, tb, g.m, g.n, g.k, &one, g.a, type(g.a_type), g.lda, g.b, type(g.a_type),
        g.ldb, &g.beta, g.c, type(g.c_type), g.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // Bias and ReLU fused into the GEMM by cuBLASLt (in its workspace, which cuBLAS shares: both
  // run on this stream, one after the other); where it does not take the call, the bias, the
  // GEMM and the ReLU as three calls with the same rounding.
  void gemm_with_epilogue(const Gemm& g) {
    CONFLUX_CHECK(g.beta == 0.0f, "gemm: an epilogue needs beta = 0, not {}", g.beta);
    if (lt_.run(g, blas_workspace_.data(), blas_workspace_.bytes(), stream_)) return;
    with_element(g.c_type, [&](auto zero) {
      using T = decltype(zero);
      T* c = static_cast<T*>(g.c);
      const auto m = static_cast<std::size_t>(g.m), ldc = static_cast<std::size_t>(g.ldc);
      const std::size_t count = m * static_cast<std::size_t>(g.n);
      Gemm plain = g;
      plain.bias = nullptr;
      plain.relu = false;
      if (g.bias != nullptr) {
        for_each(count, detail::BiasIntoRows<T>{c, static_cast<const T*>(g.bias), m, ldc});
        plain.beta = 1.0f;
      }
      gemm(plain);
      if (g.relu) for_each(count, detail::ReluInPlace<T>{c, m, ldc});
    });
  }

  void conv(const ConvCall& call) {
    const ConvShape& g = call.shape;
    ConvOptions options = conv_;
    if (call.dtype == DType::kBf16) options.precision = Precision::kBf16;
    const CudnnConv& conv = convs_.get(g, options);
    if (workspace_.bytes() < conv.workspace_bytes()) {
      // The old workspace may still be in use by enqueued calls: cudaFree waits for them.
      workspace_ = DeviceBuffer<std::byte>(conv.workspace_bytes());
    }
    void* ws = workspace_.empty() ? nullptr : workspace_.data();
    switch (call.kind) {
      case ConvCall::Kind::kForward:
        conv.forward(call.x, call.w, call.out, ws, stream_);
        break;
      case ConvCall::Kind::kBackwardData:
        conv.backward_data(call.y, call.w, call.out, ws, stream_);
        break;
      case ConvCall::Kind::kBackwardFilter:
        conv.backward_filter(call.x, call.y, call.out, ws, stream_);
        break;
    }
  }

  // Growing frees the old buffer, which cudaFree does only once the work enqueued so far that
  // may still read it is done.
  std::byte* scratch(std::size_t bytes) {
    if (scratch_.bytes() < bytes) scratch_ = DeviceBuffer<std::byte>(bytes);
    return scratch_.data();
  }

  template <class T>
  void zero(T* p, std::size_t count) {
    if (count > 0) CONFLUX_CUDA_CHECK(cudaMemsetAsync(p, 0, count * sizeof(T), stream_));
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t count) {
    if (count > 0) {
      CONFLUX_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, count * sizeof(T), cudaMemcpyDeviceToDevice, stream_));
    }
  }
  template <class T>
  void upload(T* device_dst, const T* host_src, std::size_t count) {
    copy_to_device(device_dst, host_src, count, stream_);
  }
  template <class T>
  void download(T* host_dst, const T* device_src, std::size_t count) {
    copy_to_host(host_dst, device_src, count, stream_);
  }
  void synchronize() { CONFLUX_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  using Graph = GraphExec;
  /// Starts capturing this stream's work into a graph instead of running it. Thread-local
  /// mode: the loader's threads may allocate pinned memory meanwhile.
  void begin_capture() {
    CONFLUX_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }
  /// Ends the capture and instantiates what it holds.
  Graph end_capture() {
    cudaGraph_t graph = nullptr;
    CONFLUX_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    struct Owner {
      cudaGraph_t g;
      ~Owner() { static_cast<void>(cudaGraphDestroy(g)); }
    } owner{graph};
    return Graph(graph);
  }
  /// Ends a capture that failed midway, leaving the stream usable.
  void abort_capture() noexcept {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph != nullptr) {
      static_cast<void>(cudaGraphDestroy(graph));
    }
    static_cast<void>(cudaGetLastError());  // the failure was reported by the call that threw
  }
  void launch(Graph& graph) { graph.launch(stream_); }
  /// DeviceBuffer allocations plus frees in this process so far.
  std::uint64_t memory_changes() const noexcept { return device_memory_stats().changes; }

  /// How many distinct convolution shapes (algorithm choices) there are so far.
  std::size_t conv_shapes() const noexcept { return convs_.size(); }

 private:
  cudaStream_t stream_;
  ConvOptions conv_;
  CublasHandle blas_;
  CudnnHandle dnn_;
  CudnnConvCache convs_;
  DeviceBuffer<std::byte> workspace_;
  DeviceBuffer<std::byte> blas_workspace_;
  LtGemms lt_;
  DeviceBuffer<std::byte> scratch_;  // scratch(): one call's temporaries
};

}  // namespace conflux::gpu
