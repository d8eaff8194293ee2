#pragma once
/// @file device_executor.cuh
/// The CUDA executor of layer_math.hpp / ModelEngine: element functions become grid-stride
/// kernels, GEMM descriptors cublasSgemm calls, all on one stream. Included by .cu files only.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cublas_api.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/layer_math.hpp"

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

}  // namespace detail

/// Runs everything on `stream`; binds `blas` to it.
class DeviceExecutor {
 public:
  template <class T>
  using Buffer = DeviceBuffer<T>;

  DeviceExecutor(cudaStream_t stream, cublasHandle_t blas) : stream_(stream), blas_(blas) {
    CONFLUX_CUBLAS_CHECK(cublas().set_stream(blas_, stream_));
  }
  /// An executor for work without GEMMs (gemm() throws).
  static DeviceExecutor without_blas(cudaStream_t stream) { return DeviceExecutor(stream); }

  cudaStream_t stream() const noexcept { return stream_; }
  cublasHandle_t blas() const noexcept { return blas_; }

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

  void gemm(const math::Gemm& g) {
    CONFLUX_CHECK(blas_ != nullptr, "GPU GEMM without a cuBLAS handle");
    if (g.m == 0 || g.n == 0) return;
    const float one = 1.0f;
    CONFLUX_CUBLAS_CHECK(cublas().sgemm(blas_, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &one,
                                        g.a, g.lda, g.b, g.ldb, &g.beta, g.c, g.ldc));
  }

  template <class T>
  void zero(T* p, std::size_t count) {
    if (count > 0) CONFLUX_CUDA_CHECK(cudaMemsetAsync(p, 0, count * sizeof(T), stream_));
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

 private:
  explicit DeviceExecutor(cudaStream_t stream) : stream_(stream), blas_(nullptr) {}

  cudaStream_t stream_;
  cublasHandle_t blas_;
};

}  // namespace conflux::gpu
