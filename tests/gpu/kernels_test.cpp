// The GPU kernels (conflux/gpu/kernels.hpp) on the device against the CPU layers, on random
// inputs. Tolerances: bit-identical for ReLU, max-pool (values, arg-max, gradients), im2col /
// col2im, the linear bias gradient and SGD (same arithmetic in the same order); GEMM-based
// results (linear, conv2d) within relative 1e-4 + absolute 1e-5 times the tensor's largest
// magnitude (cuBLAS sums in another order than OpenBLAS); the loss within 1e-12 relative and its
// gradient within 1e-6 relative (CUDA's double exp/log may differ from glibc's by an ulp).
// Skipped without a GPU.

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"

#if CONFLUX_HAVE_CUDA

#include <limits>
#include <vector>

#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/kernels.hpp"

namespace conflux::gpu {
namespace {

using namespace conflux::gpu::testing;  // NOLINT(google-build-using-namespace)

// Runs the kernels on device copies of host data and copies the results back.
class DeviceBackend {
 public:
  DeviceBackend() : blas_(stream_.get()) {}

  template <class T>
  DeviceBuffer<T> up(const std::vector<T>& host) {
    DeviceBuffer<T> d(host.size());
    d.copy_from_host(host, stream_.get());
    return d;
  }
  template <class T>
  std::vector<T> down(const DeviceBuffer<T>& d) {
    std::vector<T> host(d.size());
    d.copy_to_host(host, stream_.get());
    stream_.synchronize();
    return host;
  }
  // A device buffer of `count` elements filled with a marker (NaN for floats), so that an
  // element the kernels forget to write shows up.
  DeviceBuffer<float> marked(std::size_t count) {
    return up(std::vector<float>(count, std::numeric_limits<float>::quiet_NaN()));
  }
  kernels::LaunchContext ctx() const { return {.stream = stream_.get(), .blas = blas_.get()}; }

  LayerResult linear(const std::vector<float>& x, math::LinearShape s,
                     const std::vector<float>& params, const std::vector<float>& dy,
                     bool input_grad) {
    const std::size_t w = static_cast<std::size_t>(s.out) * s.in;
    auto dx_ = up(x), dp = up(params), ddy = up(dy);
    auto y = marked(static_cast<std::size_t>(s.n) * s.out), dparams = marked(params.size()),
         dx = marked(input_grad ? x.size() : 0);
    kernels::linear_forward(ctx(), dx_.data(), s, dp.data(), dp.data() + w, y.data());
    kernels::linear_backward(ctx(), dx_.data(), ddy.data(), s, dp.data(), dparams.data(),
                             dparams.data() + w, input_grad ? dx.data() : nullptr);
    return {.y = down(y), .dparams = down(dparams), .dx = down(dx), .argmax = {}};
  }

  LayerResult conv2d(const std::vector<float>& x, const math::ConvShape& s,
                     const std::vector<float>& params, const std::vector<float>& dy,
                     bool input_grad) {
    const std::size_t w = static_cast<std::size_t>(s.out_channels) * s.rows();
    auto dx_ = up(x), dp = up(params), ddy = up(dy);
    auto col = marked(s.col_floats()), tmp = marked(s.out_floats()), dcol = marked(s.col_floats()),
         ones = marked(s.pixels() * s.n), y = marked(s.out_floats()),
         dparams = marked(params.size()), dx = marked(input_grad ? x.size() : 0);
    kernels::fill(ctx(), ones.data(), ones.size(), 1.0f);
    kernels::conv2d_forward(ctx(), dx_.data(), s, dp.data(), dp.data() + w, col.data(), tmp.data(),
                            y.data());
    kernels::conv2d_backward(ctx(), ddy.data(), s, dp.data(), col.data(), ones.data(), tmp.data(),
                             input_grad ? dcol.data() : nullptr, dparams.data(), dparams.data() + w,
                             input_grad ? dx.data() : nullptr);
    return {.y = down(y), .dparams = down(dparams), .dx = down(dx), .argmax = {}};
  }

  LayerResult maxpool(const std::vector<float>& x, const math::PoolShape& s,
                      const std::vector<float>& dy) {
    auto dx_ = up(x), ddy = up(dy);
    auto y = marked(dy.size()), dx = marked(x.size());
    DeviceBuffer<std::int32_t> argmax(dy.size());
    kernels::maxpool_forward(ctx(), dx_.data(), s, y.data(), argmax.data());
    kernels::maxpool_backward(ctx(), ddy.data(), argmax.data(), s, dx.data());
    return {.y = down(y), .dparams = {}, .dx = down(dx), .argmax = down(argmax)};
  }

  LayerResult relu(const std::vector<float>& x, const std::vector<float>& dy) {
    auto dx_ = up(x), ddy = up(dy);
    auto y = marked(x.size()), dx = marked(x.size());
    kernels::relu_forward(ctx(), dx_.data(), x.size(), y.data());
    kernels::relu_backward(ctx(), dx_.data(), ddy.data(), x.size(), dx.data());
    return {.y = down(y), .dparams = {}, .dx = down(dx), .argmax = {}};
  }

  std::vector<float> im2col(const std::vector<float>& x, int n, const model::ConvGeometry& g) {
    auto dx_ = up(x);
    auto col = marked(g.col_rows() * g.col_cols() * n);
    kernels::im2col(ctx(), dx_.data(), n, g, col.data());
    return down(col);
  }

  std::vector<float> col2im(const std::vector<float>& col, int n, const model::ConvGeometry& g) {
    auto dcol = up(col);
    auto x = marked(g.image_size() * n);
    kernels::col2im(ctx(), dcol.data(), n, g, x.data());
    return down(x);
  }

  SoftmaxResult softmax(const std::vector<float>& logits, const std::vector<model::Label>& labels,
                        int n, int k, float scale) {
    auto dl = up(logits);
    auto dlabels = up(labels);
    DeviceBuffer<double> loss(n);
    DeviceBuffer<std::int32_t> status(n);
    auto grad = marked(logits.size());
    kernels::softmax_cross_entropy(ctx(), dl.data(), dlabels.data(), n, k, scale, loss.data(),
                                   status.data(), grad.data());
    return {.loss = down(loss), .status = down(status), .grad = down(grad)};
  }

  void sgd(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& v, float lr,
           float momentum, float weight_decay, bool first_step) {
    auto dw = up(w), dg = up(g), dv = up(v);
    kernels::sgd_step(ctx(), dw.data(), dg.data(), dv.data(), w.size(), lr, momentum, weight_decay,
                      first_step);
    w = down(dw);
    v = down(dv);
  }

  std::vector<float> flatten(const std::vector<float>& x) {
    auto dx_ = up(x);
    auto y = marked(x.size());
    kernels::flatten_copy(ctx(), dx_.data(), x.size(), y.data());
    return down(y);
  }

 private:
  Stream stream_;
  CublasHandle blas_;
};

TEST(GpuKernels, LinearMatchesCpu) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_linear(b, 5, 7, 3, true);
  check_linear(b, 5, 7, 3, false);
  check_linear(b, 64, 300, 10, true);
  check_linear(b, 0, 4, 2, true);
}

TEST(GpuKernels, Conv2dMatchesCpu) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_conv2d(b, 3, geometry(2, 7, 6, 3, 1, 1), 4, true);
  check_conv2d(b, 2, geometry(3, 9, 9, 3, 2, 1), 5, true);
  check_conv2d(b, 2, geometry(1, 8, 5, 5, 1, 0), 2, false);
  check_conv2d(b, 2, geometry(2, 5, 5, 1, 1, 0), 3, true);
  check_conv2d(b, 2, geometry(2, 6, 7, 2, 3, 2), 3, true);
  check_conv2d(b, 8, geometry(3, 32, 32, 3, 1, 1), 16, true);
  check_conv2d(b, 0, geometry(2, 5, 5, 3, 1, 1), 3, true);
}

TEST(GpuKernels, Im2colAndCol2imMatchCpuExactly) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_im2col(b, 3, geometry(2, 7, 6, 3, 1, 1));
  check_im2col(b, 2, geometry(3, 9, 9, 3, 2, 1));
  check_im2col(b, 2, geometry(1, 8, 5, 5, 1, 0));
  check_im2col(b, 2, geometry(2, 6, 7, 2, 3, 2));
  check_im2col(b, 1, geometry(2, 4, 4, 3, 1, 2));
}

TEST(GpuKernels, MaxPoolMatchesCpuExactly) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_maxpool(b, 2, 3, 8, 8, 2, 0, false);
  check_maxpool(b, 2, 3, 9, 7, 2, 2, false);
  check_maxpool(b, 2, 2, 7, 7, 3, 1, false);
  check_maxpool(b, 2, 2, 9, 8, 3, 2, true);
  check_maxpool(b, 1, 2, 6, 6, 2, 1, true);
}

TEST(GpuKernels, ReluMatchesCpuExactly) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_relu(b, 100000);
}

TEST(GpuKernels, FlattenCopiesExactly) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  Rng rng{19, 1};
  const std::vector<float> x = random_floats(777, rng);
  expect_bits(b.flatten(x), x, "flatten");
}

TEST(GpuKernels, SoftmaxCrossEntropyMatchesCpu) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_softmax(b, 9, 10, 1.0f / 9, 1e-12, 1e-6);
  check_softmax(b, 300, 100, 1.0f / 300, 1e-12, 1e-6);
}

TEST(GpuKernels, SgdMatchesCpuBitForBit) {
  CONFLUX_REQUIRE_GPU();
  DeviceBackend b;
  check_sgd(b, 0.0f, 0.0f);
  check_sgd(b, 0.0f, 5e-4f);
  check_sgd(b, 0.9f, 0.0f);
  check_sgd(b, 0.9f, 5e-4f);
}

}  // namespace
}  // namespace conflux::gpu

#else  // CPU-only build: the kernels do not exist; say so instead of passing silently.

namespace conflux::gpu {
namespace {

TEST(GpuKernels, NeedCudaBuild) {
  CONFLUX_REQUIRE_GPU();
}

}  // namespace
}  // namespace conflux::gpu

#endif  // CONFLUX_HAVE_CUDA
