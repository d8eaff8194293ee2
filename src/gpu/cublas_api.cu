// Loading cuBLAS at run time (gpu/cublas_api.hpp).

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/cublas_api.hpp"
#include "runtime_library.hpp"

namespace conflux::gpu {
namespace {

CublasApi load() {
  const RuntimeLibrary library("cuBLAS", fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR),
                               "is the CUDA toolkit's lib64 directory on LD_LIBRARY_PATH?");
  CublasApi api;
  library.resolve("cublasCreate_v2", api.create);
  library.resolve("cublasDestroy_v2", api.destroy);
  library.resolve("cublasSetStream_v2", api.set_stream);
  library.resolve("cublasSetMathMode", api.set_math_mode);
  library.resolve("cublasSetWorkspace_v2", api.set_workspace);
  library.resolve("cublasSgemm_v2", api.sgemm);
  library.resolve("cublasGemmEx", api.gemm_ex);
  library.resolve("cublasGetStatusName", api.status_name);
  library.resolve("cublasGetStatusString", api.status_string);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // a failed load throws and is retried on the next call
  return api;
}

}  // namespace conflux::gpu
