#pragma once
/// @file cublaslt_api.hpp
/// The cuBLASLt entry points conflux calls (GEMMs with fused epilogues: bias, ReLU), loaded
/// with dlopen on first use like cuBLAS (gpu/cublas_api.hpp says why). CUDA builds only.

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/cublaslt_api.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cublasLt.h>

namespace conflux::gpu {

/// cuBLASLt functions.
struct CublasLtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

/// Loads libcublasLt.so.<CUBLAS_VER_MAJOR> once (thread-safe), as cublas() loads cuBLAS.
const CublasLtApi& cublaslt();

}  // namespace conflux::gpu
