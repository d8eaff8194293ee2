#include "conflux/gpu/kernels.hpp"

#include "conflux/gpu/check.hpp"
#include "conflux/gpu/handles.hpp"
#include "device_executor.cuh"

namespace conflux::gpu::kernels {
namespace {

DeviceExecutor executor(const LaunchContext& ctx) {
  return ctx.blas != nullptr ? DeviceExecutor(ctx.stream, ctx.blas)
                             : DeviceExecutor::without_blas(ctx.stream);
}

}  // namespace

void linear_forward(const LaunchContext& ctx, const float* x, math::LinearShape s,
                    const float* weight, const float* bias, float* y) {
  DeviceExecutor ex = executor(ctx);
  math::linear_forward(ex, x, s, weight, bias, y);
}

void linear_backward(const LaunchContext& ctx, const float* x, const float* dy, math::LinearShape s,
                     const float* weight, float* dweight, float* dbias, float* dx) {
  DeviceExecutor ex = executor(ctx);
  math::linear_backward(ex, x, dy, s, weight, dweight, dbias, dx);
}

void im2col(const LaunchContext& ctx, const float* x, int n, const model::ConvGeometry& g,
            float* col) {
  DeviceExecutor ex = executor(ctx);
  ex.for_each(g.col_rows() * g.col_cols() * n, math::Im2col{x, col, n, g});
}

void col2im(const LaunchContext& ctx, const float* col, int n, const model::ConvGeometry& g,
            float* x) {
  DeviceExecutor ex = executor(ctx);
  ex.for_each(g.image_size() * n, math::Col2im{col, x, n, g});
}

void conv2d_forward(const LaunchContext& ctx, const float* x, const math::ConvShape& s,
                    const float* weight, const float* bias, float* col, float* tmp, float* y) {
  DeviceExecutor ex = executor(ctx);
  math::conv2d_forward(ex, x, s, weight, bias, col, tmp, y);
}

void conv2d_backward(const LaunchContext& ctx, const float* dy, const math::ConvShape& s,
                     const float* weight, const float* col, const float* ones, float* tmp,
                     float* dcol, float* dweight, float* dbias, float* dx) {
  DeviceExecutor ex = executor(ctx);
  math::conv2d_backward(ex, dy, s, weight, col, ones, tmp, dcol, dweight, dbias, dx);
}

void fill(const LaunchContext& ctx, float* p, std::size_t count, float value) {
  DeviceExecutor ex = executor(ctx);
  ex.for_each(count, math::Fill{p, value});
}

void maxpool_forward(const LaunchContext& ctx, const float* x, const math::PoolShape& s, float* y,
                     std::int32_t* argmax) {
  DeviceExecutor ex = executor(ctx);
  math::maxpool_forward(ex, x, s, y, argmax);
}

void maxpool_backward(const LaunchContext& ctx, const float* dy, const std::int32_t* argmax,
                      const math::PoolShape& s, float* dx) {
  DeviceExecutor ex = executor(ctx);
  math::maxpool_backward(ex, dy, argmax, s, dx);
}

void relu_forward(const LaunchContext& ctx, const float* x, std::size_t count, float* y) {
  DeviceExecutor ex = executor(ctx);
  math::relu_forward(ex, x, count, y);
}

void relu_backward(const LaunchContext& ctx, const float* x, const float* dy, std::size_t count,
                   float* dx) {
  DeviceExecutor ex = executor(ctx);
  math::relu_backward(ex, x, dy, count, dx);
}

void flatten_copy(const LaunchContext& ctx, const float* src, std::size_t count, float* dst) {
  copy_on_device(dst, src, count, ctx.stream);
}

void softmax_cross_entropy(const LaunchContext& ctx, const float* logits,
                           const model::Label* labels, int n, int k, float grad_scale, double* loss,
                           std::int32_t* status, float* grad) {
  DeviceExecutor ex = executor(ctx);
  math::softmax_cross_entropy(ex, logits, labels, n, k, grad_scale, loss, status, grad);
}

void sgd_step(const LaunchContext& ctx, float* params, const float* grads, float* velocity,
              std::size_t count, float lr, float momentum, float weight_decay, bool first_step) {
  DeviceExecutor ex = executor(ctx);
  math::sgd_step(ex, params, grads, velocity, count, lr, momentum, weight_decay, first_step);
}

}  // namespace conflux::gpu::kernels
