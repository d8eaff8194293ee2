#pragma once
// Loading a CUDA library (cuBLAS, cuDNN) at run time, private to src/gpu: the one way the
// libraries that only a GPU trainer needs are found (gpu/cublas_api.hpp says why they are not
// linked).

#include <string>

namespace conflux::gpu {

/// A run-time library, opened once and kept for the life of the process.
class RuntimeLibrary {
 public:
  /// Opens `name` (e.g. "libcudnn.so.9"): by name (the binary's RUNPATH, LD_LIBRARY_PATH, the
  /// system), then from the directory the CUDA runtime was loaded from. RuntimeError naming
  /// `what` ("cuDNN"), the library, each attempt's reason and `hint` when neither works.
  RuntimeLibrary(std::string what, std::string name, const char* hint);

  /// The address of `symbol` as F; RuntimeError naming the library when it has none.
  template <class F>
  void resolve(const char* symbol, F& out) const {
    out = reinterpret_cast<F>(address(symbol));
  }

 private:
  void* address(const char* symbol) const;

  std::string what_;
  std::string name_;
  void* handle_ = nullptr;
};

}  // namespace conflux::gpu
