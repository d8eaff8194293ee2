#pragma once
/// @file cudnn_conv.hpp
/// 2-D convolutions by cuDNN on channels-last (NHWC) tensors, in three precisions: one
/// CudnnConv per shape, which chooses its forward, backward-data and backward-filter algorithms
/// once, and a CudnnConvCache that builds one per shape on first use. Independent of the model:
/// plain shapes and device pointers. CUDA builds only; cuDNN is loaded on first use
/// (cudnn_api.hpp).
///
/// Layouts (all fully packed), with H' = (H + 2 padding - kernel) / stride + 1:
///   x, dx: [N, H, W, C], the input and its gradient (NHWC);
///   y, dy: [N, H', W', K], the output and its gradient (NHWC);
///   w, dw: [K, kernel, kernel, C], cuDNN's NHWC filter format (KRSC); model::Conv2d keeps
///          {K, C, kernel, kernel} (KCRS), a transpose apart.
/// Convolution as in model::Conv2d: cross-correlation, square kernel, equal stride and zero
/// padding in both dimensions, no dilation, one group.
///
/// Bias is not cuDNN's job here: these calls compute the bias-free convolution, and the caller
/// adds the bias and its gradient (planned: a kernel of its own, fused with the activation).

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/cudnn_conv.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cuda_runtime_api.h>

#include <compare>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "conflux/gpu/conv_shape.hpp"
#include "conflux/gpu/cudnn_api.hpp"
#include "conflux/gpu/precision.hpp"

namespace conflux::gpu {

/// "conv2d [N=8, C=64, H=56, W=56] -> [K=64, 56x56], kernel 3, stride 1, padding 1".
std::string to_string(const ConvShape& shape);

/// How a CudnnConv computes.
struct ConvOptions {
  Precision precision = Precision::kFp32;
  /// Only algorithms cuDNN declares deterministic (CUDNN_DETERMINISTIC): the same inputs give
  /// the same bits on every call (on the same GPU type and cuDNN version). Without it, cuDNN
  /// may choose backward algorithms that add with atomics in a varying order.
  bool deterministic = true;
  /// The most device memory any one of the three calls may use as scratch.
  std::size_t workspace_limit_bytes = std::size_t{256} << 20;

  auto operator<=>(const ConvOptions&) const = default;
};

/// One convolution shape's cuDNN descriptors and chosen algorithms. Move-only.
///
/// Algorithm choice, once, at construction, for each of the three calls: cuDNN's heuristic
/// ranking (cudnnGetConvolution*Algorithm_v7) for the shape, precision and GPU, and the first
/// (fastest expected) entry that cuDNN supports here, that is deterministic when
/// options.deterministic, that needs at most options.workspace_limit_bytes of workspace, and,
/// for kFp32, that runs with CUDNN_FMA_MATH (never TF32). RuntimeError naming the shape,
/// options and every candidate's reason when none qualifies.
///
/// Heuristics rather than cudnnFind*Ex (timing every algorithm on the device): the choice costs
/// no device time or memory and needs no data, and it is a function of shape, options, GPU type
/// and cuDNN version only, so every rank of a job (and every run) picks the same algorithms and
/// gets the same numerics; timed search can pick differently from run to run on near ties.
///
/// Calls are stream-ordered and asynchronous; results are overwritten (beta = 0), not
/// accumulated. Every pointer is device memory of the precision's element type (float, or
/// __nv_bfloat16 for kBf16), aligned as cudaMalloc's, in the layouts of the file comment.
/// `workspace` is device memory of at least workspace_bytes() bytes (nullptr when that is 0),
/// used by one call at a time: calls on different streams need workspaces of their own.
/// The handle is used, not owned: it must outlive the CudnnConv and belong to the current
/// device; each call sets its stream (cudnnSetStream), so the handle serves one host thread.
class CudnnConv {
 public:
  /// Validates the shape (positive sizes, padding >= 0, kernel within the padded input,
  /// tensors under 2^31 elements: RuntimeError otherwise) before touching `handle`.
  CudnnConv(cudnnHandle_t handle, const ConvShape& shape, const ConvOptions& options);
  ~CudnnConv();
  CudnnConv(CudnnConv&&) noexcept;
  CudnnConv& operator=(CudnnConv&&) noexcept;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  const ConvShape& shape() const noexcept { return shape_; }
  const ConvOptions& options() const noexcept { return options_; }

  /// The chosen algorithms (describe() adds the math type and workspace of each).
  cudnnConvolutionFwdAlgo_t forward_algorithm() const noexcept { return forward_.algorithm; }
  cudnnConvolutionBwdDataAlgo_t backward_data_algorithm() const noexcept {
    return backward_data_.algorithm;
  }
  cudnnConvolutionBwdFilterAlgo_t backward_filter_algorithm() const noexcept {
    return backward_filter_.algorithm;
  }
  /// Workspace bytes the largest of the three calls needs (<= options().workspace_limit_bytes).
  std::size_t workspace_bytes() const noexcept;
  /// For logs: "fwd IMPLICIT_PRECOMP_GEMM (tensor-op math, 0 B), bwd-data ALGO_1 (...), ...".
  std::string describe() const;

  /// y = conv(x, w).
  void forward(const void* x, const void* w, void* y, void* workspace, cudaStream_t stream) const;
  /// dx = dL/dx from dy and w.
  void backward_data(const void* dy, const void* w, void* dx, void* workspace,
                     cudaStream_t stream) const;
  /// dw = dL/dw from x and dy, summed over the batch.
  void backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                       cudaStream_t stream) const;

 private:
  struct Descriptors;  // the tensor, filter and (one per call) convolution descriptors
  template <class Algorithm>
  struct Choice {
    Algorithm algorithm{};
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    std::size_t workspace_bytes = 0;
  };

  const Descriptors& descriptors() const;  // RuntimeError when moved from
  static void check_workspace(const void* workspace, std::size_t bytes, const char* call);

  cudnnHandle_t handle_ = nullptr;
  ConvShape shape_;
  ConvOptions options_;
  std::unique_ptr<Descriptors> d_;
  Choice<cudnnConvolutionFwdAlgo_t> forward_;
  Choice<cudnnConvolutionBwdDataAlgo_t> backward_data_;
  Choice<cudnnConvolutionBwdFilterAlgo_t> backward_filter_;
};

/// The CudnnConv of each (shape, options) pair, built on first request, so that the algorithm
/// choice runs once per shape. References stay valid for the cache's life. Not thread-safe;
/// the handle is used as by CudnnConv.
class CudnnConvCache {
 public:
  /// `options`: those of get(shape).
  explicit CudnnConvCache(cudnnHandle_t handle, ConvOptions options = {})
      : handle_(handle), options_(options) {}

  /// The convolution for `shape` with the cache's options (built now if new; a failed build
  /// throws and caches nothing).
  const CudnnConv& get(const ConvShape& shape) { return get(shape, options_); }
  const CudnnConv& get(const ConvShape& shape, const ConvOptions& options);

  /// Distinct convolutions built so far.
  std::size_t size() const noexcept { return convs_.size(); }
  /// The largest workspace any of them needs: enough for a workspace they share.
  std::size_t workspace_bytes() const noexcept;

 private:
  cudnnHandle_t handle_;
  ConvOptions options_;
  std::map<std::pair<ConvShape, ConvOptions>, CudnnConv> convs_;
};

}  // namespace conflux::gpu
