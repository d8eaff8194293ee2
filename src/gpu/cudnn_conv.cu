// cuDNN convolutions in NHWC (gpu/cudnn_conv.hpp). Host code only: every device operation is a
// cuDNN call.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/cudnn_api.hpp"
#include "conflux/gpu/cudnn_conv.hpp"

namespace conflux::gpu {
namespace {

cudnnDataType_t data_type(Precision precision) {
  return precision == Precision::kBf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// The math type set before asking cuDNN's heuristic, which then ranks only algorithms allowed
// by it: FMA alone (no TF32) for fp32; the default, which allows TF32 tensor cores for float
// data on sm_80 and newer, for tf32 (PyTorch's choice with allow_tf32); tensor cores for bf16.
cudnnMathType_t requested_math(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return CUDNN_FMA_MATH;
    case Precision::kTf32:
      return CUDNN_DEFAULT_MATH;
    case Precision::kBf16:
      return CUDNN_TENSOR_OP_MATH;
  }
  return CUDNN_FMA_MATH;
}

const char* math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor-op-allow-conversion";
    case CUDNN_FMA_MATH:
      return "fma";
  }
  return "unknown";
}

std::string algorithm_name(cudnnConvolutionFwdAlgo_t algorithm) {
  switch (algorithm) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return fmt::format("algorithm {}", static_cast<int>(algorithm));
  }
}

std::string algorithm_name(cudnnConvolutionBwdDataAlgo_t algorithm) {
  switch (algorithm) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
      return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
      return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return fmt::format("algorithm {}", static_cast<int>(algorithm));
  }
}

std::string algorithm_name(cudnnConvolutionBwdFilterAlgo_t algorithm) {
  switch (algorithm) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
      return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
      return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
      return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
      return "FFT_TILING";
    default:
      return fmt::format("algorithm {}", static_cast<int>(algorithm));
  }
}

// cuDNN's name for a status plus its last error message (which this reads, and so clears).
std::string status_text(cudnnStatus_t status) {
  const CudnnApi& api = cudnn();
  std::string text = api.get_error_string(status);
  std::array<char, 1024> last{};
  api.get_last_error_string(last.data(), last.size());
  last.back() = '\0';
  if (last.front() != '\0') text += fmt::format(" ({})", last.data());
  return text;
}

void validate(const ConvShape& s) {
  CONFLUX_CHECK(s.batch > 0 && s.channels > 0 && s.height > 0 && s.width > 0 &&
                    s.out_channels > 0 && s.kernel > 0 && s.stride > 0 && s.padding >= 0,
                "cuDNN convolution: bad shape {}", to_string(s));
  CONFLUX_CHECK(s.height + 2 * s.padding >= s.kernel && s.width + 2 * s.padding >= s.kernel,
                "cuDNN convolution: the kernel does not fit the padded input: {}", to_string(s));
  // cuDNN's descriptors and most of its kernels index with 32-bit integers.
  constexpr std::size_t kLimit = INT_MAX;
  CONFLUX_CHECK(s.input_elements() <= kLimit && s.output_elements() <= kLimit &&
                    s.weight_elements() <= kLimit,
                "cuDNN convolution: a tensor of {} has 2^31 elements or more; split the batch",
                to_string(s));
}

// The first entry of cuDNN's heuristic ranking that qualifies (see CudnnConv). `heuristic`
// fills the ranking: (requested, &returned, perfs) -> status; `query` gives an algorithm's
// workspace with the descriptor's math type: (algorithm, &bytes) -> status.
template <class Choice, class Perf, class Heuristic, class Query>
Choice choose(const char* call, cudnnConvolutionDescriptor_t conv, int max_count,
              const Heuristic& heuristic, const Query& query, const ConvOptions& options) {
  const CudnnApi& api = cudnn();
  std::vector<Perf> ranking(static_cast<std::size_t>(std::max(max_count, 1)));
  int returned = 0;
  const cudnnStatus_t ranked =
      heuristic(static_cast<int>(ranking.size()), &returned, ranking.data());
  CONFLUX_CHECK(ranked == CUDNN_STATUS_SUCCESS, "cuDNN's {} algorithm heuristic failed: {}", call,
                status_text(ranked));
  std::vector<std::string> rejected;
  for (int i = 0; i < std::min(returned, static_cast<int>(ranking.size())); ++i) {
    const Perf& p = ranking[i];
    const std::string name =
        fmt::format("{} ({} math)", algorithm_name(p.algo), math_name(p.mathType));
    if (p.status != CUDNN_STATUS_SUCCESS) {
      rejected.push_back(fmt::format("{}: {}", name, api.get_error_string(p.status)));
      continue;
    }
    if (options.deterministic && p.determinism != CUDNN_DETERMINISTIC) {
      rejected.push_back(name + ": not deterministic");
      continue;
    }
    if (options.precision == Precision::kFp32 && p.mathType != CUDNN_FMA_MATH) {
      rejected.push_back(name + ": not FMA math (fp32 runs without TF32)");
      continue;
    }
    // The workspace, and later the call, depend on the math type the algorithm runs in.
    CONFLUX_CUDNN_CHECK(api.set_convolution_math_type(conv, p.mathType));
    std::size_t bytes = 0;
    const cudnnStatus_t status = query(p.algo, &bytes);
    if (status != CUDNN_STATUS_SUCCESS) {
      rejected.push_back(fmt::format("{}: workspace query failed: {}", name, status_text(status)));
      continue;
    }
    if (bytes > options.workspace_limit_bytes) {
      rejected.push_back(fmt::format("{}: needs {} B of workspace", name, bytes));
      continue;
    }
    return {.algorithm = p.algo, .math = p.mathType, .workspace_bytes = bytes};
  }
  // The caller names the shape and precision.
  CONFLUX_RUNTIME_ERROR(
      "no {} algorithm ({}, workspace limit {} B) on this GPU; cuDNN's ranking: {}", call,
      options.deterministic ? "deterministic" : "non-deterministic allowed",
      options.workspace_limit_bytes,
      rejected.empty() ? std::string("empty") : fmt::format("{}", fmt::join(rejected, "; ")));
}

}  // namespace

std::string to_string(const ConvShape& s) {
  const bool valid =
      s.stride > 0 && s.height + 2 * s.padding >= s.kernel && s.width + 2 * s.padding >= s.kernel;
  const std::string out =
      valid ? fmt::format("{}x{}", s.output_height(), s.output_width()) : std::string("?");
  return fmt::format(
      "conv2d [N={}, C={}, H={}, W={}] -> [K={}, {}], kernel {}, stride {}, padding {}", s.batch,
      s.channels, s.height, s.width, s.out_channels, out, s.kernel, s.stride, s.padding);
}

// ---- CudnnConv ------------------------------------------------------------------------------

struct CudnnConv::Descriptors {
  cudnnTensorDescriptor_t x = nullptr;  // also dx
  cudnnTensorDescriptor_t y = nullptr;  // also dy
  cudnnFilterDescriptor_t w = nullptr;  // also dw
  // One convolution descriptor per call, each with its algorithm's math type.
  cudnnConvolutionDescriptor_t forward = nullptr;
  cudnnConvolutionDescriptor_t backward_data = nullptr;
  cudnnConvolutionDescriptor_t backward_filter = nullptr;

  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    // cuDNN is loaded: these were created by it (or are all null).
    if (x == nullptr) return;
    const CudnnApi& api = cudnn();
    static_cast<void>(api.destroy_tensor_descriptor(x));
    if (y != nullptr) static_cast<void>(api.destroy_tensor_descriptor(y));
    if (w != nullptr) static_cast<void>(api.destroy_filter_descriptor(w));
    for (cudnnConvolutionDescriptor_t c : {forward, backward_data, backward_filter}) {
      if (c != nullptr) static_cast<void>(api.destroy_convolution_descriptor(c));
    }
  }
};

CudnnConv::CudnnConv(cudnnHandle_t handle, const ConvShape& shape, const ConvOptions& options)
    : handle_(handle), shape_(shape), options_(options) {
  validate(shape);
  const CudnnApi& api = cudnn();
  const ConvShape& s = shape_;
  const cudnnDataType_t type = data_type(options.precision);
  d_ = std::make_unique<Descriptors>();
  Descriptors& d = *d_;
  try {
    CONFLUX_CUDNN_CHECK(api.create_tensor_descriptor(&d.x));
    CONFLUX_CUDNN_CHECK(api.set_tensor_4d_descriptor(d.x, CUDNN_TENSOR_NHWC, type, s.batch,
                                                     s.channels, s.height, s.width));
    CONFLUX_CUDNN_CHECK(api.create_tensor_descriptor(&d.y));
    CONFLUX_CUDNN_CHECK(api.set_tensor_4d_descriptor(d.y, CUDNN_TENSOR_NHWC, type, s.batch,
                                                     s.out_channels, s.output_height(),
                                                     s.output_width()));
    CONFLUX_CUDNN_CHECK(api.create_filter_descriptor(&d.w));
    CONFLUX_CUDNN_CHECK(api.set_filter_4d_descriptor(d.w, type, CUDNN_TENSOR_NHWC, s.out_channels,
                                                     s.channels, s.kernel, s.kernel));
    for (cudnnConvolutionDescriptor_t* c : {&d.forward, &d.backward_data, &d.backward_filter}) {
      CONFLUX_CUDNN_CHECK(api.create_convolution_descriptor(c));
      // Accumulation in fp32 for every precision (compute type float).
      CONFLUX_CUDNN_CHECK(api.set_convolution_2d_descriptor(*c, s.padding, s.padding, s.stride,
                                                            s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                            CUDNN_DATA_FLOAT));
      CONFLUX_CUDNN_CHECK(api.set_convolution_math_type(*c, requested_math(options.precision)));
    }

    int count = 0;
    CONFLUX_CUDNN_CHECK(api.forward_algorithm_max_count(handle_, &count));
    forward_ = choose<decltype(forward_), cudnnConvolutionFwdAlgoPerf_t>(
        "forward", d.forward, count,
        [&](int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perfs) {
          return api.forward_algorithm_v7(handle_, d.x, d.w, d.forward, d.y, requested, returned,
                                          perfs);
        },
        [&](cudnnConvolutionFwdAlgo_t algorithm, std::size_t* bytes) {
          return api.forward_workspace_size(handle_, d.x, d.w, d.forward, d.y, algorithm, bytes);
        },
        options);

    CONFLUX_CUDNN_CHECK(api.backward_data_algorithm_max_count(handle_, &count));
    backward_data_ = choose<decltype(backward_data_), cudnnConvolutionBwdDataAlgoPerf_t>(
        "backward-data", d.backward_data, count,
        [&](int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
          return api.backward_data_algorithm_v7(handle_, d.w, d.y, d.backward_data, d.x, requested,
                                                returned, perfs);
        },
        [&](cudnnConvolutionBwdDataAlgo_t algorithm, std::size_t* bytes) {
          return api.backward_data_workspace_size(handle_, d.w, d.y, d.backward_data, d.x,
                                                  algorithm, bytes);
        },
        options);

    CONFLUX_CUDNN_CHECK(api.backward_filter_algorithm_max_count(handle_, &count));
    backward_filter_ = choose<decltype(backward_filter_), cudnnConvolutionBwdFilterAlgoPerf_t>(
        "backward-filter", d.backward_filter, count,
        [&](int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
          return api.backward_filter_algorithm_v7(handle_, d.x, d.y, d.backward_filter, d.w,
                                                  requested, returned, perfs);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algorithm, std::size_t* bytes) {
          return api.backward_filter_workspace_size(handle_, d.x, d.y, d.backward_filter, d.w,
                                                    algorithm, bytes);
        },
        options);
  } catch (const Error& e) {
    // Name the shape; d_ releases what was created.
    CONFLUX_RUNTIME_ERROR("cuDNN convolution {} ({}): {}", to_string(s),
                          to_string(options.precision), e.what());
  }
}

CudnnConv::~CudnnConv() = default;
CudnnConv::CudnnConv(CudnnConv&&) noexcept = default;
CudnnConv& CudnnConv::operator=(CudnnConv&&) noexcept = default;

const CudnnConv::Descriptors& CudnnConv::descriptors() const {
  CONFLUX_CHECK(d_ != nullptr, "CudnnConv: used after being moved from");
  return *d_;
}

void CudnnConv::check_workspace(const void* workspace, std::size_t bytes, const char* call) {
  CONFLUX_CHECK(workspace != nullptr || bytes == 0,
                "CudnnConv::{}: no workspace given, but the algorithm needs {} B", call, bytes);
}

std::size_t CudnnConv::workspace_bytes() const noexcept {
  return std::max(
      {forward_.workspace_bytes, backward_data_.workspace_bytes, backward_filter_.workspace_bytes});
}

std::string CudnnConv::describe() const {
  return fmt::format(
      "fwd {} ({} math, {} B), bwd-data {} ({} math, {} B), bwd-filter {} ({} math, {} B)",
      algorithm_name(forward_.algorithm), math_name(forward_.math), forward_.workspace_bytes,
      algorithm_name(backward_data_.algorithm), math_name(backward_data_.math),
      backward_data_.workspace_bytes, algorithm_name(backward_filter_.algorithm),
      math_name(backward_filter_.math), backward_filter_.workspace_bytes);
}

namespace {
// alpha = 1, beta = 0: results overwrite. Scaling factors are float for float and bf16 data.
constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;
}  // namespace

void CudnnConv::forward(const void* x, const void* w, void* y, void* workspace,
                        cudaStream_t stream) const {
  const Descriptors& d = descriptors();
  check_workspace(workspace, forward_.workspace_bytes, "forward");
  const CudnnApi& api = cudnn();
  try {
    CONFLUX_CUDNN_CHECK(api.set_stream(handle_, stream));
    CONFLUX_CUDNN_CHECK(api.convolution_forward(handle_, &kOne, d.x, x, d.w, w, d.forward,
                                                forward_.algorithm, workspace,
                                                forward_.workspace_bytes, &kZero, d.y, y));
  } catch (const Error& e) {
    CONFLUX_RUNTIME_ERROR("cuDNN convolution {} ({}), forward: {}", to_string(shape_),
                          to_string(options_.precision), e.what());
  }
}

void CudnnConv::backward_data(const void* dy, const void* w, void* dx, void* workspace,
                              cudaStream_t stream) const {
  const Descriptors& d = descriptors();
  check_workspace(workspace, backward_data_.workspace_bytes, "backward_data");
  const CudnnApi& api = cudnn();
  try {
    CONFLUX_CUDNN_CHECK(api.set_stream(handle_, stream));
    CONFLUX_CUDNN_CHECK(api.convolution_backward_data(
        handle_, &kOne, d.w, w, d.y, dy, d.backward_data, backward_data_.algorithm, workspace,
        backward_data_.workspace_bytes, &kZero, d.x, dx));
  } catch (const Error& e) {
    CONFLUX_RUNTIME_ERROR("cuDNN convolution {} ({}), backward data: {}", to_string(shape_),
                          to_string(options_.precision), e.what());
  }
}

void CudnnConv::backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                                cudaStream_t stream) const {
  const Descriptors& d = descriptors();
  check_workspace(workspace, backward_filter_.workspace_bytes, "backward_filter");
  const CudnnApi& api = cudnn();
  try {
    CONFLUX_CUDNN_CHECK(api.set_stream(handle_, stream));
    CONFLUX_CUDNN_CHECK(api.convolution_backward_filter(
        handle_, &kOne, d.x, x, d.y, dy, d.backward_filter, backward_filter_.algorithm, workspace,
        backward_filter_.workspace_bytes, &kZero, d.w, dw));
  } catch (const Error& e) {
    CONFLUX_RUNTIME_ERROR("cuDNN convolution {} ({}), backward filter: {}", to_string(shape_),
                          to_string(options_.precision), e.what());
  }
}

// ---- CudnnConvCache -------------------------------------------------------------------------

const CudnnConv& CudnnConvCache::get(const ConvShape& shape, const ConvOptions& options) {
  auto key = std::make_pair(shape, options);
  auto it = convs_.find(key);
  if (it == convs_.end()) {
    it = convs_.emplace(std::move(key), CudnnConv(handle_, shape, options)).first;
  }
  return it->second;
}

std::size_t CudnnConvCache::workspace_bytes() const noexcept {
  std::size_t bytes = 0;
  for (const auto& [key, conv] : convs_) bytes = std::max(bytes, conv.workspace_bytes());
  return bytes;
}

}  // namespace conflux::gpu
