#pragma once
/// @file device_layer.hpp
/// The GPU side of "one model, kernels per device": a layer's kernels on a device executor, the
/// tensors they work on, and what a pass tells them. Free of CUDA types: the kernels are
/// templates over an executor, instantiated for CUDA (src/gpu, grid-stride kernels, cuBLAS and
/// cuDNN) and, in the tests, for a host executor that runs the same element functions in
/// loops, so that the GPU path's indexing is checked on machines without a GPU.
///
/// An executor `Ex` provides:
///   - `template <class T> using Buffer`: owned memory of the device (data(), size(),
///     constructible from a count);
///   - `for_each(count, f)`: calls f(i) for every i in [0, count), in any order and in parallel
///     (f writes only what element i owns);
///   - `gemm(const Gemm&)`: column-major SGEMM as cuBLAS takes it, with an optional bias and
///     ReLU epilogue;
///   - `conv(const ConvCall&)`: a convolution of NHWC activations with KRSC weights (forward,
///     backward data or backward filter), cuDNN's semantics;
///   - `scratch(bytes)`: device memory for one kernel call's temporaries (a fused ReLU's gated
///     gradient), the same buffer for every layer, valid until the next scratch() call;
///   - `zero(p, count)`, `copy(dst, src, count)` (device to device), `upload(dst, host, count)`,
///     `download(host, src, count)` and `synchronize()`; a download is complete when
///     synchronize() returns.
///
/// Layout: activations of images live channels-last (NHWC) on the device, with the logical shape
/// [N, C, H, W] of the CPU model; feature batches are [N, F]. Parameters keep the CPU layout
/// (conv2d weights {out, C, k, k}), so that checkpoints and model files do not depend on the
/// device; a kernel that wants another layout converts its working copy.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conflux/config/layer_spec.hpp"
#include "conflux/core/host_device.hpp"
#include "conflux/gpu/conv_shape.hpp"
#include "conflux/gpu/precision.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::gpu {

/// One column-major GEMM with alpha = 1, cuBLAS's arguments (cublasGemmEx's when a type is
/// bf16): C[m x n] = op(A)[m x k] * op(B)[k x n] + beta * C, op(X) = X^T when trans_X,
/// accumulated in fp32. A row-major [r, c] matrix is a column-major [c x r] one with leading
/// dimension c. Float GEMMs are plain SGEMMs.
struct Gemm {
  bool trans_a = false;
  bool trans_b = false;
  int m = 0;
  int n = 0;
  int k = 0;
  const void* a = nullptr;
  int lda = 0;
  const void* b = nullptr;
  int ldb = 0;
  float beta = 0.0f;
  void* c = nullptr;
  int ldc = 0;
  DType a_type = DType::kF32;  ///< element types of A, B (the same) and C
  DType c_type = DType::kF32;
  /// Epilogue: C = op(A) op(B) + bias, bias[i] added to row i of C (m values of c_type, beta 0),
  /// then max(., 0) with relu: cuBLASLt's fused epilogues on a GPU.
  const void* bias = nullptr;
  bool relu = false;
};

/// One convolution call: y = conv(x, w) (kForward), dx from dy and w (kBackwardData), or dw
/// from x and dy (kBackwardFilter). Every call overwrites its output; every tensor has the
/// element type `dtype`; accumulation is fp32.
struct ConvCall {
  enum class Kind { kForward, kBackwardData, kBackwardFilter };
  Kind kind = Kind::kForward;
  ConvShape shape;
  const void* x = nullptr;  ///< input [N, H, W, C] (forward, backward filter)
  const void* w = nullptr;  ///< weights [K, k, k, C] (forward, backward data)
  const void* y = nullptr;  ///< dy [N, H', W', K] (backward)
  void* out = nullptr;      ///< what the call writes: y, dx or dw
  DType dtype = DType::kF32;
};

/// A batch on a device: the CPU model's logical shape, channels-last storage for images, fp32
/// or bf16 elements. Storage only grows, so that a smaller last batch of an epoch reuses it.
template <class Ex>
struct DeviceTensor {
  std::vector<int> shape;
  DType dtype = DType::kF32;
  typename Ex::template Buffer<std::byte> storage;

  std::size_t size() const noexcept { return model::Tensor::count_of(shape); }
  int batch() const noexcept { return shape.empty() ? 0 : shape[0]; }
  /// The elements as T (float or Bf16, as dtype says).
  template <class T>
  T* data() noexcept {
    return reinterpret_cast<T*>(storage.data());
  }
  template <class T>
  const T* data() const noexcept {
    return reinterpret_cast<const T*>(storage.data());
  }
  /// The storage, untyped.
  void* raw() noexcept { return storage.data(); }
  const void* raw() const noexcept { return storage.data(); }
  /// Sets the shape and type; grows the storage when it is too small (values unspecified).
  void resize(std::vector<int> new_shape, DType type) {
    shape = std::move(new_shape);
    dtype = type;
    const std::size_t bytes = size() * size_of(type);
    if (storage.size() < bytes) storage = typename Ex::template Buffer<std::byte>(bytes);
  }
};

/// Grows `buffer` to at least `count` elements (values unspecified after growth).
template <class Buffer>
void ensure(Buffer& buffer, std::size_t count) {
  if (buffer.size() < count) buffer = Buffer(count);
}

/// Batch norm's statistics summed over the trainers in device memory, in stream order (NCCL on
/// GPUs): unlike model::StatReducer, no wait for the host.
class DeviceStatSum {
 public:
  virtual ~DeviceStatSum() = default;
  /// Replaces the `count` doubles at `values` (device memory) by their element-wise sums over
  /// the trainers, enqueued after the work enqueued so far.
  virtual void sum(double* values, std::size_t count) = 0;
};

/// What a pass tells the device kernels (model::Pass, with the sample indices on the device).
struct DevicePass {
  bool training = false;                   ///< batch statistics and dropout when true
  std::uint64_t seed = 0;                  ///< run.seed: dropout masks
  const std::uint64_t* step = nullptr;     ///< device: the global training step (dropout masks)
  const std::uint32_t* samples = nullptr;  ///< device: dataset index of each row; null: row
  model::StatReducer* reducer = nullptr;   ///< sums over trainers (host); null: this replica
  DeviceStatSum* device_sum = nullptr;     ///< sums over trainers on the device (else reducer)
};

/// One training step's batch, in device memory.
struct StepBatch {
  const float* images = nullptr;           ///< channels-first floats, or
  const std::uint8_t* pixels = nullptr;    ///< 8-bit images (set_pixel_normalisation())
  const model::Label* labels = nullptr;    ///< one per sample
  const std::uint32_t* samples = nullptr;  ///< dataset index of each row (dropout); null: row
  int n = 0;                               ///< samples
};

/// What a training step computes besides its batch; the same every step of a run but the last
/// batch's grad_scale.
struct StepOptions {
  float grad_scale = 1.0f;                ///< dL/dlogits scale (1 / the global batch)
  double label_smoothing = 0.0;           ///< train.label_smoothing
  std::uint64_t seed = 0;                 ///< run.seed: dropout masks
  model::StatReducer* reducer = nullptr;  ///< batch norm's sums over trainers; null: this one
  DeviceStatSum* device_sum = nullptr;    ///< the same on the device (taken over reducer)
};

/// The spans of the model's flat device buffers that belong to one layer, in the layer's
/// param_layout / buffer_layout order (the CPU layout).
struct DeviceBinding {
  float* params = nullptr;
  float* grads = nullptr;
  std::size_t param_count = 0;
  float* buffers = nullptr;  ///< running statistics (batch norm)
  std::size_t buffer_count = 0;
};

/// What a layer's device kernels are built from.
struct DeviceLayerSpec {
  const LayerSpec* spec = nullptr;
  std::size_t index = 0;                   ///< in the model (dropout's salt)
  std::vector<model::SampleShape> inputs;  ///< per-sample shape of each input
  model::SampleShape output;               ///< per-sample shape of the output
  DType activations = DType::kF32;         ///< element type of every activation and its gradient
};

/// One layer's kernels on executor Ex: the GPU twin of model::Layer, with the same semantics
/// (conflux/model/<type>.hpp), called by gpu::DeviceModel through the model's GraphWalk.
template <class Ex>
class DeviceLayer {
 public:
  using Tensor = DeviceTensor<Ex>;
  using Inputs = std::span<const Tensor* const>;
  using InputGrads = std::span<Tensor* const>;

  virtual ~DeviceLayer() = default;
  /// Gives the layer its parameters, gradients and buffers (device memory).
  virtual void bind(const DeviceBinding& /*binding*/) {}
  /// Applies a ReLU to the layer's own output, as model::Layer::fuse_relu; false where the
  /// layer cannot (the model then refuses, since the CPU plan fused it).
  virtual bool fuse_relu() noexcept { return false; }
  /// Computes the output of `in`; keeps what backward needs.
  virtual void forward(Ex& ex, const DevicePass& pass, Inputs in, Tensor& out) = 0;
  /// Writes the gradient of each input whose entry is not nullptr and overwrites the layer's
  /// parameter gradients, after forward() with the same pass and inputs.
  virtual void backward(Ex& ex, const DevicePass& pass, Inputs in, const Tensor& grad_out,
                        InputGrads grad_in) = 0;

 protected:
  /// The gradient of input k, resized like that input with element type `dtype`; nullptr when
  /// nothing reads it.
  static Tensor* input_grad(Inputs in, InputGrads grad_in, std::size_t k, DType dtype) {
    if (grad_in[k] == nullptr) return nullptr;
    grad_in[k]->resize(in[k]->shape, dtype);
    return grad_in[k];
  }
};

}  // namespace conflux::gpu
