// Loading cuBLASLt at run time (gpu/cublaslt_api.hpp).

#include <fmt/format.h>

#include "conflux/gpu/cublaslt_api.hpp"
#include "runtime_library.hpp"

namespace conflux::gpu {
namespace {

CublasLtApi load() {
  const RuntimeLibrary library("cuBLASLt", fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR),
                               "is the CUDA toolkit's lib64 directory on LD_LIBRARY_PATH?");
  CublasLtApi api;
  library.resolve("cublasLtCreate", api.create);
  library.resolve("cublasLtDestroy", api.destroy);
  library.resolve("cublasLtMatmulDescCreate", api.desc_create);
  library.resolve("cublasLtMatmulDescDestroy", api.desc_destroy);
  library.resolve("cublasLtMatmulDescSetAttribute", api.desc_set);
  library.resolve("cublasLtMatrixLayoutCreate", api.layout_create);
  library.resolve("cublasLtMatrixLayoutDestroy", api.layout_destroy);
  library.resolve("cublasLtMatmulPreferenceCreate", api.preference_create);
  library.resolve("cublasLtMatmulPreferenceDestroy", api.preference_destroy);
  library.resolve("cublasLtMatmulPreferenceSetAttribute", api.preference_set);
  library.resolve("cublasLtMatmulAlgoGetHeuristic", api.heuristic);
  library.resolve("cublasLtMatmul", api.matmul);
  return api;
}

}  // namespace

const CublasLtApi& cublaslt() {
  static const CublasLtApi api = load();  // a failed load throws and is retried on the next call
  return api;
}

}  // namespace conflux::gpu
