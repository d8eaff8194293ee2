#pragma once
/// @file linear.hpp
/// linear's device kernels: y = x W^T + b (then the fused ReLU) as one GEMM with a bias (and
/// ReLU) epilogue, cuBLASLt's on a GPU: the product's sum plus the bias, as the CPU's GEMM adds
/// the product onto the bias; dY gated by the output where a ReLU is fused, dW = dY^T X, db =
/// column sums of dY, dX = dY W. With bf16 activations the GEMMs take a bf16 copy of the
/// weights and bias (made each forward, as autocast casts them) and write the weight gradient
/// in fp32.

#include <cstddef>
#include <cstdint>

#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"

namespace conflux::gpu::kernels {

/// sums[j] = sum over r of x[r, j], in row order from 0 (the CPU linear bias gradient).
template <class T>
struct ColumnSums {
  const T* x;
  float* sums;
  std::size_t rows;
  std::size_t width;
  CONFLUX_HD void operator()(std::size_t j) const {
    float s = 0.0f;
    for (std::size_t r = 0; r < rows; ++r) s += load(x, r * width + j);
    sums[j] = s;
  }
};

template <class Ex>
class LinearKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit LinearKernel(const DeviceLayerSpec& s)
      : in_(s.inputs.at(0).at(0)), out_(s.output.at(0)), dtype_(s.activations) {}

  void bind(const DeviceBinding& b) override {
    const std::size_t w = weight_count();
    weight_ = b.params;
    bias_ = b.params + w;
    weight_grad_ = b.grads;
    bias_grad_ = b.grads + w;
  }

  bool fuse_relu() noexcept override { return relu_ = true; }

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    const int n = x.batch();
    out.resize({n, out_}, dtype_);
    output_ = &out;
    const Operands w = gemm_operands(ex);
    // Column-major: y^T [out x n] = W [out x in] x^T [in x n] + b; W row-major is [in x out].
    ex.gemm({.trans_a = true,
             .trans_b = false,
             .m = out_,
             .n = n,
             .k = in_,
             .a = w.weights,
             .lda = in_,
             .b = x.raw(),
             .ldb = in_,
             .beta = 0.0f,
             .c = out.raw(),
             .ldc = out_,
             .a_type = dtype_,
             .c_type = dtype_,
             .bias = w.bias,
             .relu = relu_});
  }

  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    const Tensor& x = *in[0];
    const int n = x.batch();
    const void* dy = gated(ex, grad_out);
    if (n == 0) {
      ex.zero(weight_grad_, weight_count() + static_cast<std::size_t>(out_));
    } else {
      // dW^T [in x out] = x^T [in x n] dy [n x out], in fp32.
      ex.gemm({.trans_a = false,
               .trans_b = true,
               .m = in_,
               .n = out_,
               .k = n,
               .a = x.raw(),
               .lda = in_,
               .b = dy,
               .ldb = out_,
               .beta = 0.0f,
               .c = weight_grad_,
               .ldc = in_,
               .a_type = dtype_,
               .c_type = DType::kF32});
      with_element(dtype_, [&](auto zero) {
        using T = decltype(zero);
        ex.for_each(static_cast<std::size_t>(out_),
                    ColumnSums<T>{static_cast<const T*>(dy), bias_grad_,
                                  static_cast<std::size_t>(n), static_cast<std::size_t>(out_)});
      });
    }
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    if (n == 0) return;
    // dx^T [in x n] = W^T [in x out] dy^T [out x n] (the forward's weights).
    ex.gemm({.trans_a = false,
             .trans_b = false,
             .m = in_,
             .n = n,
             .k = out_,
             .a = dtype_ == DType::kF32 ? static_cast<const void*>(weight_) : low_.data(),
             .lda = in_,
             .b = dy,
             .ldb = out_,
             .beta = 0.0f,
             .c = gx->raw(),
             .ldc = in_,
             .a_type = dtype_,
             .c_type = dtype_});
  }

 private:
  std::size_t weight_count() const noexcept { return static_cast<std::size_t>(out_) * in_; }
  struct Operands {
    const void* weights;
    const void* bias;
  };
  // The weights and bias the forward GEMM reads: the fp32 masters, or bf16 copies made now.
  // The bias 16-byte aligned (cuBLASLt's epilogue reads it so): in the parameters it follows
  // the weights at any offset, so an fp32 bias there may need a copy of its own.
  Operands gemm_operands(Ex& ex) {
    const auto out = static_cast<std::size_t>(out_);
    if (dtype_ == DType::kF32) {
      if (reinterpret_cast<std::uintptr_t>(bias_) % 16 == 0) return {weight_, bias_};
      ensure(bias_copy_, out);
      ex.for_each(out, Cast<float, float>{bias_, bias_copy_.data()});
      return {weight_, bias_copy_.data()};
    }
    const std::size_t bias_at = (weight_count() + 7) / 8 * 8;  // 8 bf16 = 16 bytes
    ensure(low_, bias_at + out);
    ex.for_each(weight_count(), Cast<float, Bf16>{weight_, low_.data()});
    ex.for_each(out, Cast<float, Bf16>{bias_, low_.data() + bias_at});
    return {low_.data(), low_.data() + bias_at};
  }
  // dY, gated by the forward's output where the ReLU is fused.
  const void* gated(Ex& ex, const Tensor& grad_out) {
    if (!relu_ || grad_out.size() == 0) return grad_out.raw();
    return with_element(dtype_, [&](auto zero) -> const void* {
      using T = decltype(zero);
      T* g = reinterpret_cast<T*>(ex.scratch(grad_out.size() * sizeof(T)));
      ex.for_each(grad_out.size(),
                  ReluGate<T>{output_->template data<T>(), grad_out.template data<T>(), g});
      return g;
    });
  }

  int in_;
  int out_;
  DType dtype_;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  float* weight_grad_ = nullptr;
  float* bias_grad_ = nullptr;
  bool relu_ = false;                              // a fused ReLU (fuse_relu())
  const Tensor* output_ = nullptr;                 // the last forward's output: the ReLU's gate
  typename Ex::template Buffer<Bf16> low_;         // bf16 copies of the weights and bias
  typename Ex::template Buffer<float> bias_copy_;  // an aligned fp32 bias (gemm_operands())
};

}  // namespace conflux::gpu::kernels
