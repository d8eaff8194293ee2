#pragma once
/// @file check.hpp
/// Error checks for CUDA runtime, cuBLAS and NCCL calls: each macro throws conflux::RuntimeError
/// (exit code 3) naming the call, the library's error name and text, and the source location.
/// CUDA builds only (make CUDA=1, which defines CONFLUX_HAVE_CUDA).

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/check.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace conflux::gpu::detail {

/// Throws RuntimeError "CALL failed: cudaErrorX (text)"; also clears the runtime's last error.
[[noreturn]] void throw_cuda_error(const char* call, cudaError_t error, const char* file, int line);
/// Throws RuntimeError "CALL failed: CUBLAS_STATUS_X (text)".
[[noreturn]] void throw_cublas_error(const char* call, cublasStatus_t status, const char* file,
                                     int line);
/// Throws RuntimeError "CALL failed: NCCL error N (text)".
[[noreturn]] void throw_nccl_error(const char* call, ncclResult_t result, const char* file,
                                   int line);

}  // namespace conflux::gpu::detail

/// Evaluates a CUDA runtime call once; throws RuntimeError unless it returns cudaSuccess.
#define CONFLUX_CUDA_CHECK(expr)                                                                 \
  do {                                                                                           \
    const cudaError_t conflux_cuda_status_ = (expr);                                             \
    if (conflux_cuda_status_ != cudaSuccess) [[unlikely]]                                        \
      ::conflux::gpu::detail::throw_cuda_error(#expr, conflux_cuda_status_, __FILE__, __LINE__); \
  } while (0)

/// Checks the launch of the kernel just enqueued (bad configuration, missing device code).
#define CONFLUX_CUDA_CHECK_LAUNCH() CONFLUX_CUDA_CHECK(cudaGetLastError())

/// Evaluates a cuBLAS call once; throws RuntimeError unless it returns CUBLAS_STATUS_SUCCESS.
#define CONFLUX_CUBLAS_CHECK(expr)                                                        \
  do {                                                                                    \
    const cublasStatus_t conflux_cublas_status_ = (expr);                                 \
    if (conflux_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                     \
      ::conflux::gpu::detail::throw_cublas_error(#expr, conflux_cublas_status_, __FILE__, \
                                                 __LINE__);                               \
  } while (0)

/// Evaluates an NCCL call once; throws RuntimeError unless it returns ncclSuccess.
#define CONFLUX_NCCL_CHECK(expr)                                                                 \
  do {                                                                                           \
    const ncclResult_t conflux_nccl_status_ = (expr);                                            \
    if (conflux_nccl_status_ != ncclSuccess) [[unlikely]]                                        \
      ::conflux::gpu::detail::throw_nccl_error(#expr, conflux_nccl_status_, __FILE__, __LINE__); \
  } while (0)

namespace conflux::gpu::detail {

/// Throws RuntimeError "CALL failed: CUDNN_STATUS_X: <cuDNN's last error message>"
/// (src/gpu/cudnn_api.cu). `status` is a cudnnStatus_t; int keeps cudnn.h out of this header.
[[noreturn]] void throw_cudnn_error(const char* call, int status, const char* file, int line);

}  // namespace conflux::gpu::detail

/// Evaluates a cuDNN call once; throws RuntimeError unless it returns CUDNN_STATUS_SUCCESS. Use
/// it where cudnn.h is included (conflux/gpu/cudnn_api.hpp).
#define CONFLUX_CUDNN_CHECK(expr)                                                               \
  do {                                                                                          \
    const cudnnStatus_t conflux_cudnn_status_ = (expr);                                         \
    if (conflux_cudnn_status_ != CUDNN_STATUS_SUCCESS) [[unlikely]]                             \
      ::conflux::gpu::detail::throw_cudnn_error(#expr, static_cast<int>(conflux_cudnn_status_), \
                                                __FILE__, __LINE__);                            \
  } while (0)
