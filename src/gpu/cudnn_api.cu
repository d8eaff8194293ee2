// Loading cuDNN at run time (gpu/cudnn_api.hpp) and CONFLUX_CUDNN_CHECK's error helper.

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cudnn_api.hpp"

namespace conflux::gpu {
namespace detail {

void throw_cudnn_error(const char* call, int status, const char* file, int line) {
  // cuDNN is loaded at run time; when it cannot be, only the number is known.
  std::string what;
  try {
    const CudnnApi& api = cudnn();
    what = api.get_error_string(static_cast<cudnnStatus_t>(status));
    // cuDNN 9 keeps a per-thread message for the last failure, with the reason (which
    // parameter, which sub-library failed to load); reading it clears it.
    std::array<char, 1024> last{};
    api.get_last_error_string(last.data(), last.size());
    last.back() = '\0';
    if (last.front() != '\0') what += fmt::format(": {}", last.data());
  } catch (const Error&) {
    what = fmt::format("cuDNN status {}", status);
  }
  throw RuntimeError(fmt::format("{} failed: {}", call, what), file, line);
}

}  // namespace detail

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
    CONFLUX_RUNTIME_ERROR("cuDNN: {} has no {}: {}", library_name, symbol,
                          why != nullptr ? why : "not found");
  }
  out = reinterpret_cast<F>(address);
}

CudnnApi load() {
  const std::string name = fmt::format("libcudnn.so.{}", CUDNN_MAJOR);
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
        "cuDNN: cannot load {} ({}); is cuDNN {} installed, and its lib directory on "
        "LD_LIBRARY_PATH?",
        name, why, CUDNN_MAJOR);
  }
  // The library stays loaded for the life of the process.
  const char* n = name.c_str();
  CudnnApi api;
  resolve(library, n, "cudnnGetVersion", api.get_version);
  resolve(library, n, "cudnnGetErrorString", api.get_error_string);
  resolve(library, n, "cudnnGetLastErrorString", api.get_last_error_string);
  resolve(library, n, "cudnnCreate", api.create);
  resolve(library, n, "cudnnDestroy", api.destroy);
  resolve(library, n, "cudnnSetStream", api.set_stream);
  resolve(library, n, "cudnnCreateTensorDescriptor", api.create_tensor_descriptor);
  resolve(library, n, "cudnnSetTensor4dDescriptor", api.set_tensor_4d_descriptor);
  resolve(library, n, "cudnnDestroyTensorDescriptor", api.destroy_tensor_descriptor);
  resolve(library, n, "cudnnCreateFilterDescriptor", api.create_filter_descriptor);
  resolve(library, n, "cudnnSetFilter4dDescriptor", api.set_filter_4d_descriptor);
  resolve(library, n, "cudnnDestroyFilterDescriptor", api.destroy_filter_descriptor);
  resolve(library, n, "cudnnCreateConvolutionDescriptor", api.create_convolution_descriptor);
  resolve(library, n, "cudnnSetConvolution2dDescriptor", api.set_convolution_2d_descriptor);
  resolve(library, n, "cudnnSetConvolutionMathType", api.set_convolution_math_type);
  resolve(library, n, "cudnnDestroyConvolutionDescriptor", api.destroy_convolution_descriptor);
  resolve(library, n, "cudnnGetConvolutionForwardAlgorithmMaxCount",
          api.forward_algorithm_max_count);
  resolve(library, n, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
          api.backward_data_algorithm_max_count);
  resolve(library, n, "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
          api.backward_filter_algorithm_max_count);
  resolve(library, n, "cudnnGetConvolutionForwardAlgorithm_v7", api.forward_algorithm_v7);
  resolve(library, n, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
          api.backward_data_algorithm_v7);
  resolve(library, n, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
          api.backward_filter_algorithm_v7);
  resolve(library, n, "cudnnGetConvolutionForwardWorkspaceSize", api.forward_workspace_size);
  resolve(library, n, "cudnnGetConvolutionBackwardDataWorkspaceSize",
          api.backward_data_workspace_size);
  resolve(library, n, "cudnnGetConvolutionBackwardFilterWorkspaceSize",
          api.backward_filter_workspace_size);
  resolve(library, n, "cudnnConvolutionForward", api.convolution_forward);
  resolve(library, n, "cudnnConvolutionBackwardData", api.convolution_backward_data);
  resolve(library, n, "cudnnConvolutionBackwardFilter", api.convolution_backward_filter);
  return api;
}

}  // namespace

const CudnnApi& cudnn() {
  static const CudnnApi api = load();  // a failed load throws and is retried on the next call
  return api;
}

}  // namespace conflux::gpu
