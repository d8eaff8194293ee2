// Loading cuBLAS at run time (gpu/cublas_api.hpp).

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/cublas_api.hpp"

namespace conflux::gpu {
namespace {

// The directory of the loaded CUDA runtime library, or empty.
std::string cudart_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudaGetDeviceCount), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

template <class F>
void resolve(void* library, const char* library_name, const char* symbol, F& out) {
  void* address = dlsym(library, symbol);
  if (address == nullptr) {
    const char* why = dlerror();
    CONFLUX_RUNTIME_ERROR("cuBLAS: {} has no {}: {}", library_name, symbol,
                          why != nullptr ? why : "not found");
  }
  out = reinterpret_cast<F>(address);
}

CublasApi load() {
  const std::string name = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why;
  if (library == nullptr) {
    const char* first = dlerror();
    why = first != nullptr ? first : "not found";
    const std::string dir = cudart_directory();
    if (!dir.empty()) {
      const std::string path = dir + "/" + name;
      library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library == nullptr) {
        const char* second = dlerror();
        why += fmt::format("; {}: {}", path, second != nullptr ? second : "not found");
      }
    }
  }
  if (library == nullptr) {
    CONFLUX_RUNTIME_ERROR(
        "cuBLAS: cannot load {} ({}); is the CUDA toolkit's lib64 directory on "
        "LD_LIBRARY_PATH?",
        name, why);
  }
  // The library stays loaded for the life of the process.
  CublasApi api;
  resolve(library, name.c_str(), "cublasCreate_v2", api.create);
  resolve(library, name.c_str(), "cublasDestroy_v2", api.destroy);
  resolve(library, name.c_str(), "cublasSetStream_v2", api.set_stream);
  resolve(library, name.c_str(), "cublasSetMathMode", api.set_math_mode);
  resolve(library, name.c_str(), "cublasGemmEx", api.gemm_ex);
  resolve(library, name.c_str(), "cublasSgemm_v2", api.sgemm);
  resolve(library, name.c_str(), "cublasGetStatusName", api.status_name);
  resolve(library, name.c_str(), "cublasGetStatusString", api.status_string);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // a failed load throws and is retried on the next call
  return api;
}

}  // namespace conflux::gpu
