#pragma once
/// @file linear.hpp
/// linear's device kernels: y = x W^T + b as a bias broadcast and one GEMM (the CPU order:
/// bias first, the product added onto it); dW = dY^T X, db = column sums of dY, dX = dY W. With
/// bf16 activations the GEMMs take a bf16 copy of the weights (made each forward, as autocast
/// casts them) and write the weight gradient in fp32.

#include <cstddef>

#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"

namespace conflux::gpu::kernels {

/// y[r, j] = bias[j] for a row-major [rows, width] y.
template <class T>
struct BroadcastRows {
  T* y;
  const float* bias;
  std::size_t width;
  CONFLUX_HD void operator()(std::size_t i) const { store(y, i, bias[i % width]); }
};

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

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    const int n = x.batch();
    out.resize({n, out_}, dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(out.size(),
                  BroadcastRows<T>{out.template data<T>(), bias_, static_cast<std::size_t>(out_)});
    });
    // Column-major: y^T [out x n] += W [out x in] x^T [in x n]; W row-major is [in x out].
    ex.gemm({.trans_a = true,
             .trans_b = false,
             .m = out_,
             .n = n,
             .k = in_,
             .a = gemm_weights(ex),
             .lda = in_,
             .b = x.raw(),
             .ldb = in_,
             .beta = 1.0f,
             .c = out.raw(),
             .ldc = out_,
             .a_type = dtype_,
             .c_type = dtype_});
  }

  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    const Tensor& x = *in[0];
    const int n = x.batch();
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
               .b = grad_out.raw(),
               .ldb = out_,
               .beta = 0.0f,
               .c = weight_grad_,
               .ldc = in_,
               .a_type = dtype_,
               .c_type = DType::kF32});
      with_element(dtype_, [&](auto zero) {
        using T = decltype(zero);
        ex.for_each(static_cast<std::size_t>(out_),
                    ColumnSums<T>{grad_out.template data<T>(), bias_grad_,
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
             .b = grad_out.raw(),
             .ldb = out_,
             .beta = 0.0f,
             .c = gx->raw(),
             .ldc = in_,
             .a_type = dtype_,
             .c_type = dtype_});
  }

 private:
  std::size_t weight_count() const noexcept { return static_cast<std::size_t>(out_) * in_; }
  // The weights the GEMMs read: the fp32 master, or its bf16 copy made now.
  const void* gemm_weights(Ex& ex) {
    if (dtype_ == DType::kF32) return weight_;
    ensure(low_, weight_count());
    ex.for_each(weight_count(), Cast<float, Bf16>{weight_, low_.data()});
    return low_.data();
  }

  int in_;
  int out_;
  DType dtype_;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  float* weight_grad_ = nullptr;
  float* bias_grad_ = nullptr;
  typename Ex::template Buffer<Bf16> low_;  // bf16 copy of the weights (bf16 activations)
};

}  // namespace conflux::gpu::kernels
