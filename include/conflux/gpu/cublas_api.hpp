#pragma once
/// @file cublas_api.hpp
/// The cuBLAS entry points conflux calls, loaded with dlopen on first use instead of linked.
/// libcublas pulls in libcublasLt, whose writable data is about 190 MB in every process that
/// loads it: linked, it would count against the Lambda-like memory cap (RLIMIT_DATA of
/// [limits]) of every rank of a CUDA build, CPU trainers and workers included. Loaded here, only
/// a process that creates a cuBLAS handle (a GPU trainer) pays for it. CUDA builds only.

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/cublas_api.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cublas_v2.h>

namespace conflux::gpu {

/// cuBLAS functions (the _v2 entry points that cublas_v2.h's names map to).
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  // cublas_api.h overloads cublasGemmEx for C++ (a cudaDataType compute type): the C one.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

/// Loads libcublas.so.<CUBLAS_VER_MAJOR> once (thread-safe): first by name (the binary's
/// RUNPATH, LD_LIBRARY_PATH, the system), then from the directory the CUDA runtime was loaded
/// from. RuntimeError naming the library and dlerror()'s reason when it cannot.
const CublasApi& cublas();

}  // namespace conflux::gpu
