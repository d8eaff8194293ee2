// Loading cuDNN at run time (gpu/cudnn_api.hpp) and CONFLUX_CUDNN_CHECK's error helper.

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cudnn_api.hpp"
#include "runtime_library.hpp"

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

CudnnApi load() {
  const RuntimeLibrary library(
      "cuDNN", fmt::format("libcudnn.so.{}", CUDNN_MAJOR),
      fmt::format("is cuDNN {} installed, and its lib directory on LD_LIBRARY_PATH?", CUDNN_MAJOR)
          .c_str());
  CudnnApi api;
  library.resolve("cudnnGetVersion", api.get_version);
  library.resolve("cudnnGetErrorString", api.get_error_string);
  library.resolve("cudnnGetLastErrorString", api.get_last_error_string);
  library.resolve("cudnnCreate", api.create);
  library.resolve("cudnnDestroy", api.destroy);
  library.resolve("cudnnSetStream", api.set_stream);
  library.resolve("cudnnCreateTensorDescriptor", api.create_tensor_descriptor);
  library.resolve("cudnnSetTensor4dDescriptor", api.set_tensor_4d_descriptor);
  library.resolve("cudnnDestroyTensorDescriptor", api.destroy_tensor_descriptor);
  library.resolve("cudnnCreateFilterDescriptor", api.create_filter_descriptor);
  library.resolve("cudnnSetFilter4dDescriptor", api.set_filter_4d_descriptor);
  library.resolve("cudnnDestroyFilterDescriptor", api.destroy_filter_descriptor);
  library.resolve("cudnnCreateConvolutionDescriptor", api.create_convolution_descriptor);
  library.resolve("cudnnSetConvolution2dDescriptor", api.set_convolution_2d_descriptor);
  library.resolve("cudnnSetConvolutionMathType", api.set_convolution_math_type);
  library.resolve("cudnnDestroyConvolutionDescriptor", api.destroy_convolution_descriptor);
  library.resolve("cudnnGetConvolutionForwardAlgorithmMaxCount", api.forward_algorithm_max_count);
  library.resolve("cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
                  api.backward_data_algorithm_max_count);
  library.resolve("cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
                  api.backward_filter_algorithm_max_count);
  library.resolve("cudnnGetConvolutionForwardAlgorithm_v7", api.forward_algorithm_v7);
  library.resolve("cudnnGetConvolutionBackwardDataAlgorithm_v7", api.backward_data_algorithm_v7);
  library.resolve("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                  api.backward_filter_algorithm_v7);
  library.resolve("cudnnGetConvolutionForwardWorkspaceSize", api.forward_workspace_size);
  library.resolve("cudnnGetConvolutionBackwardDataWorkspaceSize", api.backward_data_workspace_size);
  library.resolve("cudnnGetConvolutionBackwardFilterWorkspaceSize",
                  api.backward_filter_workspace_size);
  library.resolve("cudnnConvolutionForward", api.convolution_forward);
  library.resolve("cudnnConvolutionBackwardData", api.convolution_backward_data);
  library.resolve("cudnnConvolutionBackwardFilter", api.convolution_backward_filter);
  return api;
}

}  // namespace

const CudnnApi& cudnn() {
  static const CudnnApi api = load();  // a failed load throws and is retried on the next call
  return api;
}

}  // namespace conflux::gpu
