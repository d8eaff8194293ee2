#pragma once
/// @file cudnn_api.hpp
/// The cuDNN entry points conflux calls, loaded with dlopen on first use instead of linked (as
/// cuBLAS, cublas_api.hpp). The reason is start-up: a linked libcudnn would have to be present
/// wherever the binary starts, and a CUDA build also runs on hosts without cuDNN (CPU-only
/// machines, CPU trainers and workers). Memory is a lesser reason: opening the shim and calling
/// into its ops and cnn parts raised VmData by under 2 MB (cuDNN 9.19, measured without a GPU); its
/// large parts (engine and heuristic libraries, ~330 MB on disk) were not loaded by any of
/// that. Still, a process that never uses cuDNN now maps none of it. CUDA builds only; the build
/// needs cuDNN's headers (cudnn.h), not its libraries.
///
/// cuDNN 9 splits the library into a small shim, libcudnn.so.9, which exports every API
/// function, and sub-libraries (libcudnn_graph, _ops, _cnn, ...) that the shim loads when a
/// function of theirs is first called; only the shim is opened here. The convolution calls
/// used are cuDNN's "legacy" descriptor API (cudnn_cnn.h), deprecated in cuDNN 9 in favour of
/// the graph API but supported throughout 9.x.

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/cudnn_api.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cudnn.h>

#include "conflux/gpu/check.hpp"  // CONFLUX_CUDNN_CHECK

namespace conflux::gpu {

/// The cuDNN functions conflux uses, nothing more.
struct CudnnApi {
  // Library, errors, handles. cudnnGetVersion and the error strings need no GPU.
  decltype(&cudnnGetVersion) get_version = nullptr;
  decltype(&cudnnGetErrorString) get_error_string = nullptr;
  decltype(&cudnnGetLastErrorString) get_last_error_string = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnDestroy) destroy = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  // Descriptors.
  decltype(&cudnnCreateTensorDescriptor) create_tensor_descriptor = nullptr;
  decltype(&cudnnSetTensor4dDescriptor) set_tensor_4d_descriptor = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor_descriptor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) create_filter_descriptor = nullptr;
  decltype(&cudnnSetFilter4dDescriptor) set_filter_4d_descriptor = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter_descriptor = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) create_convolution_descriptor = nullptr;
  decltype(&cudnnSetConvolution2dDescriptor) set_convolution_2d_descriptor = nullptr;
  decltype(&cudnnSetConvolutionMathType) set_convolution_math_type = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_convolution_descriptor = nullptr;
  // Algorithm heuristics (ranked lists; the MaxCount calls size them) and workspace sizes.
  decltype(&cudnnGetConvolutionForwardAlgorithmMaxCount) forward_algorithm_max_count = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithmMaxCount) backward_data_algorithm_max_count =
      nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithmMaxCount)
      backward_filter_algorithm_max_count = nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) forward_algorithm_v7 = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) backward_data_algorithm_v7 = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) backward_filter_algorithm_v7 = nullptr;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) forward_workspace_size = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) backward_data_workspace_size = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) backward_filter_workspace_size =
      nullptr;
  // The convolutions.
  decltype(&cudnnConvolutionForward) convolution_forward = nullptr;
  decltype(&cudnnConvolutionBackwardData) convolution_backward_data = nullptr;
  decltype(&cudnnConvolutionBackwardFilter) convolution_backward_filter = nullptr;
};

/// Loads libcudnn.so.<CUDNN_MAJOR> once (thread-safe): first by name (the binary's RUNPATH,
/// LD_LIBRARY_PATH, the system's cache), then from the directory the CUDA runtime was loaded
/// from. RuntimeError naming the library and dlerror()'s reason when it cannot (and the next
/// call tries again). Needs no GPU.
const CudnnApi& cudnn();

}  // namespace conflux::gpu
