#pragma once
/// @file kernels.hpp
/// The GPU layers as host functions that enqueue kernels and cuBLAS calls on a stream: forward
/// and backward of linear, conv2d (im2col / col2im + SGEMM), max-pool, ReLU and flatten, the
/// softmax cross-entropy and the SGD step. Same semantics and parameter layouts as the CPU layers
/// (conflux/model); the math is in layer_math.hpp. All pointers are device pointers; nothing
/// synchronises. CUDA builds only.

#if !CONFLUX_HAVE_CUDA
#error "conflux/gpu/kernels.hpp needs a CUDA build (make CUDA=1)"
#endif

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "conflux/gpu/layer_math.hpp"
#include "conflux/model/im2col.hpp"

namespace conflux::gpu::kernels {

/// Where work goes: everything is enqueued on `stream`; calls with GEMMs bind `blas` to it.
struct LaunchContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
};

/// y [n, out] = x [n, in] W^T + b; W [out, in], b [out] (model::Linear).
void linear_forward(const LaunchContext& ctx, const float* x, math::LinearShape s,
                    const float* weight, const float* bias, float* y);
/// dW = dY^T X, db = column sums of dY, dX = dY W (skipped when dx is null); overwrites.
void linear_backward(const LaunchContext& ctx, const float* x, const float* dy, math::LinearShape s,
                     const float* weight, float* dweight, float* dbias, float* dx);

/// Patch matrix [C*k*k, n*H'*W'] of n images [n, C, H, W] (model::im2col per image, side by side).
void im2col(const LaunchContext& ctx, const float* x, int n, const model::ConvGeometry& g,
            float* col);
/// Adjoint of im2col: overwrites x [n, C, H, W].
void col2im(const LaunchContext& ctx, const float* col, int n, const model::ConvGeometry& g,
            float* x);
/// Conv2d forward (model::Conv2d); col: s.col_floats() floats, kept for backward; tmp:
/// s.out_floats() floats of scratch.
void conv2d_forward(const LaunchContext& ctx, const float* x, const math::ConvShape& s,
                    const float* weight, const float* bias, float* col, float* tmp, float* y);
/// Conv2d backward from the forward's col; ones: n*H'*W' floats equal to 1; tmp: s.out_floats()
/// and dcol: s.col_floats() floats of scratch (dcol and dx may be null to skip dL/dx).
void conv2d_backward(const LaunchContext& ctx, const float* dy, const math::ConvShape& s,
                     const float* weight, const float* col, const float* ones, float* tmp,
                     float* dcol, float* dweight, float* dbias, float* dx);

/// p[0..count) = value.
void fill(const LaunchContext& ctx, float* p, std::size_t count, float value);

/// Max-pool forward (model::MaxPool2d): y and argmax (index within the input plane) hold
/// planes * out_height * out_width elements.
void maxpool_forward(const LaunchContext& ctx, const float* x, const math::PoolShape& s, float* y,
                     std::int32_t* argmax);
/// Max-pool backward: overwrites dx [planes, H, W].
void maxpool_backward(const LaunchContext& ctx, const float* dy, const std::int32_t* argmax,
                      const math::PoolShape& s, float* dx);

/// y = max(x, 0) on `count` elements.
void relu_forward(const LaunchContext& ctx, const float* x, std::size_t count, float* y);
/// dx = x > 0 ? dy : 0.
void relu_backward(const LaunchContext& ctx, const float* x, const float* dy, std::size_t count,
                   float* dx);

/// Flatten is a view in GpuModel; as a kernel, a copy of `count` floats (either direction).
void flatten_copy(const LaunchContext& ctx, const float* src, std::size_t count, float* dst);

/// Softmax cross-entropy of logits [n, k] (model::softmax_cross_entropy), per sample: loss[i]
/// (double), status[i] (1 correct, 0 wrong, -1 - label for a label >= k) and, unless grad is
/// null, grad [n, k] = grad_scale * (softmax - onehot). Sum with sum_losses() (model_engine.hpp).
void softmax_cross_entropy(const LaunchContext& ctx, const float* logits,
                           const model::Label* labels, int n, int k, float grad_scale, double* loss,
                           std::int32_t* status, float* grad);

/// One model::Sgd step over `count` parameters: first_step = !Sgd::started().
void sgd_step(const LaunchContext& ctx, float* params, const float* grads, float* velocity,
              std::size_t count, float lr, float momentum, float weight_decay, bool first_step);

}  // namespace conflux::gpu::kernels
