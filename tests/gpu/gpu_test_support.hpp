#pragma once
/// @file gpu_test_support.hpp
/// Shared by the GPU tests: the no-GPU skip, random data, comparisons with stated tolerances,
/// and layer checks against the CPU layers that run on any backend (the host emulation of the
/// GPU code path, or the GPU itself).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../support/bound_layer.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/gpu/layer_math.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/sgd.hpp"
#include "conflux/model/tensor.hpp"

/// First statement of every test that needs a GPU: skips it, with the reason, when the process
/// sees none (no driver, no device, or a CPU-only build), else makes device 0 current.
#define CONFLUX_REQUIRE_GPU()                                                     \
  do {                                                                            \
    const ::conflux::gpu::GpuProbe conflux_probe_ = ::conflux::gpu::probe_gpus(); \
    if (conflux_probe_.devices == 0) {                                            \
      GTEST_SKIP() << "no GPU: " << conflux_probe_.reason;                        \
    }                                                                             \
    ::conflux::gpu::use_device(0);                                                \
  } while (0)

namespace conflux::gpu::testing {

/// Tolerances of GEMM-based results against the CPU layers (OpenBLAS vs cuBLAS or the
/// emulation's plain loop differ only in summation order): element-wise
/// |got - want| <= kRel * |want| + kAbs * max(1, max |want|).
inline constexpr double kRel = 1e-4;
inline constexpr double kAbs = 1e-5;

inline std::vector<float> random_floats(std::size_t count, Rng& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::vector<float> v(count);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

inline model::Tensor tensor(std::vector<int> shape, std::vector<float> data) {
  model::Tensor t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

/// Every element within the GEMM tolerance; reports the worst one.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         const std::string& what, double rel = kRel, double abs = kAbs) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1.0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  std::size_t worst = 0;
  double worst_excess = -1.0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double tol = rel * std::fabs(want[i]) + abs * scale;
    if (!(err <= tol)) ++bad;  // also catches NaN
    if (!(err - tol <= worst_excess)) {
      worst_excess = err - tol;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements out of tolerance; worst at " << worst << ": got "
                     << (got.empty() ? 0.0f : got[worst]) << ", want "
                     << (want.empty() ? 0.0f : want[worst]);
}

/// Bit-identical float vectors.
inline void expect_bits(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ; first at "
                     << first << ": got " << (bad ? got[first] : 0.0f) << ", want "
                     << (bad ? want[first] : 0.0f);
}

// ---- layer results and CPU references --------------------------------------------------

/// Forward output, parameter gradients (weight then bias, as in the flat layout) and input
/// gradient of one layer, plus what the layer records (argmax, patch matrix).
struct LayerResult {
  std::vector<float> y;
  std::vector<float> dparams;
  std::vector<float> dx;
  std::vector<std::int32_t> argmax;
};

/// One layer of `spec` on a batch `x` of `sample` shape: CPU forward and backward from dy,
/// with the parameters `params` (initialised like a Model's when empty; returned).
inline LayerResult cpu_layer(const LayerSpec& spec, const model::SampleShape& sample, int n,
                             const std::vector<float>& x, const std::vector<float>& dy,
                             bool input_grad, std::vector<float>& params) {
  Rng rng{7, 7};
  conflux::testing::BoundLayer b = conflux::testing::bind_layer(spec, sample, rng);
  if (params.empty()) {
    params = b.params;
  } else {
    std::copy(params.begin(), params.end(), b.params.begin());
  }
  b.layer->set_input_grad_needed(input_grad);
  std::vector<int> shape{n};
  shape.insert(shape.end(), sample.begin(), sample.end());
  const model::Tensor in = tensor(shape, x);
  model::Tensor out;
  b.layer->forward(in, out);
  LayerResult r;
  r.y = out.data;
  model::Tensor grad_in;
  b.layer->backward(in, tensor(out.shape, dy), grad_in);
  r.dparams = b.grads;
  if (input_grad) r.dx = grad_in.data;
  return r;
}

/// What a backend (host emulation or GPU) must provide for the shared layer checks: each call
/// takes host data, runs the GPU code path and returns host results.
///   LayerResult linear(x, LinearShape, params, dy, input_grad)
///   LayerResult conv2d(x, ConvShape, params, dy, input_grad)
///   LayerResult maxpool(x, PoolShape, dy)
///   LayerResult relu(x, dy)
///   std::vector<float> im2col(x, n, geometry) / col2im(col, n, geometry)
///   SoftmaxResult softmax(logits, labels, n, k, grad_scale)
///   void sgd(params, grads, velocity, lr, momentum, weight_decay, first_step)   (in place)
struct SoftmaxResult {
  std::vector<double> loss;
  std::vector<std::int32_t> status;
  std::vector<float> grad;
};

template <class Backend>
void check_linear(Backend& backend, int n, int in, int out, bool input_grad) {
  SCOPED_TRACE(::testing::Message()
               << "linear n=" << n << " " << in << "->" << out << (input_grad ? "" : " no dx"));
  Rng rng{11, static_cast<std::uint64_t>(n * 1000 + in * 10 + out)};
  const std::vector<float> x = random_floats(static_cast<std::size_t>(n) * in, rng);
  const std::vector<float> dy = random_floats(static_cast<std::size_t>(n) * out, rng);
  std::vector<float> params;
  const LayerResult want =
      cpu_layer({.type = "linear", .out = out}, {in}, n, x, dy, input_grad, params);
  const LayerResult got =
      backend.linear(x, math::LinearShape{.n = n, .in = in, .out = out}, params, dy, input_grad);
  expect_close(got.y, want.y, "y");
  const std::size_t w = static_cast<std::size_t>(out) * in;
  expect_close({got.dparams.begin(), got.dparams.begin() + w},
               {want.dparams.begin(), want.dparams.begin() + w}, "dW");
  // The bias gradient adds the rows in the CPU's order: identical.
  expect_bits({got.dparams.begin() + w, got.dparams.end()},
              {want.dparams.begin() + w, want.dparams.end()}, "db");
  if (input_grad) expect_close(got.dx, want.dx, "dx");
}

inline model::ConvGeometry geometry(int c, int h, int w, int k, int s, int p) {
  model::ConvGeometry g{
      .channels = c, .height = h, .width = w, .kernel = k, .stride = s, .padding = p};
  g.compute_output();
  return g;
}

template <class Backend>
void check_conv2d(Backend& backend, int n, const model::ConvGeometry& g, int out, bool input_grad) {
  SCOPED_TRACE(::testing::Message()
               << "conv2d n=" << n << " [" << g.channels << "," << g.height << "," << g.width
               << "] -> " << out << " k" << g.kernel << " s" << g.stride << " p" << g.padding);
  Rng rng{12, static_cast<std::uint64_t>(g.kernel * 100 + g.stride * 10 + g.padding)};
  const std::vector<float> x = random_floats(g.image_size() * n, rng);
  const std::vector<float> dy = random_floats(g.col_cols() * out * n, rng);
  std::vector<float> params;
  const LayerResult want = cpu_layer(
      {.type = "conv2d", .out = out, .kernel = g.kernel, .stride = g.stride, .padding = g.padding},
      {g.channels, g.height, g.width}, n, x, dy, input_grad, params);
  const LayerResult got = backend.conv2d(x, math::ConvShape{.n = n, .g = g, .out_channels = out},
                                         params, dy, input_grad);
  expect_close(got.y, want.y, "y");
  expect_close(got.dparams, want.dparams, "dW, db");
  if (input_grad) expect_close(got.dx, want.dx, "dx");
}

template <class Backend>
void check_im2col(Backend& backend, int n, const model::ConvGeometry& g) {
  SCOPED_TRACE(::testing::Message()
               << "im2col n=" << n << " k" << g.kernel << " s" << g.stride << " p" << g.padding);
  Rng rng{13, 1};
  const std::vector<float> x = random_floats(g.image_size() * n, rng);
  const std::size_t col_size = g.col_rows() * g.col_cols();
  // CPU: per image [rows, pixels]; GPU layout: [rows, n * pixels], image i at column i*pixels.
  std::vector<float> want(col_size * n);
  std::vector<float> one(col_size);
  for (int i = 0; i < n; ++i) {
    model::im2col(std::span<const float>(x).subspan(i * g.image_size(), g.image_size()), g, one);
    for (std::size_t r = 0; r < g.col_rows(); ++r) {
      std::copy_n(one.begin() + r * g.col_cols(), g.col_cols(),
                  want.begin() + (r * n + i) * g.col_cols());
    }
  }
  expect_bits(backend.im2col(x, n, g), want, "col");

  const std::vector<float> col = random_floats(col_size * n, rng);
  std::vector<float> want_x(g.image_size() * n);
  for (int i = 0; i < n; ++i) {
    for (std::size_t r = 0; r < g.col_rows(); ++r) {
      std::copy_n(col.begin() + (r * n + i) * g.col_cols(), g.col_cols(),
                  one.begin() + r * g.col_cols());
    }
    model::col2im(one, g, std::span<float>(want_x).subspan(i * g.image_size(), g.image_size()));
  }
  expect_bits(backend.col2im(col, n, g), want_x, "image");
}

template <class Backend>
void check_maxpool(Backend& backend, int n, int c, int h, int w, int kernel, int stride,
                   bool ties) {
  SCOPED_TRACE(::testing::Message() << "maxpool [" << c << "," << h << "," << w << "] k" << kernel
                                    << " s" << stride << (ties ? " ties" : ""));
  Rng rng{14, static_cast<std::uint64_t>(kernel * 10 + stride)};
  std::vector<float> x = random_floats(static_cast<std::size_t>(n) * c * h * w, rng);
  if (ties) {
    for (float& v : x) v = std::round(v * 2.0f);  // few distinct values: many tied maxima
  }
  const LayerSpec spec{.type = "maxpool", .kernel = kernel, .stride = stride};
  const model::SampleShape out_shape = model::make_layer(spec)->output_shape({c, h, w});
  const math::PoolShape s{.planes = static_cast<std::size_t>(n) * c,
                          .height = h,
                          .width = w,
                          .kernel = kernel,
                          .stride = stride == 0 ? kernel : stride,
                          .out_height = out_shape[1],
                          .out_width = out_shape[2]};
  const std::vector<float> dy = random_floats(s.planes * s.out_height * s.out_width, rng);
  std::vector<float> params;
  const LayerResult want = cpu_layer(spec, {c, h, w}, n, x, dy, true, params);
  const LayerResult got = backend.maxpool(x, s, dy);
  expect_bits(got.y, want.y, "y");
  expect_bits(got.dx, want.dx, "dx");
  // The recorded arg-max is each output's first maximum within its plane.
  ASSERT_EQ(got.argmax.size(), got.y.size());
  const std::size_t in_plane = static_cast<std::size_t>(h) * w;
  const std::size_t out_plane = static_cast<std::size_t>(s.out_height) * s.out_width;
  for (std::size_t j = 0; j < got.argmax.size(); ++j) {
    ASSERT_EQ(x[(j / out_plane) * in_plane + got.argmax[j]], got.y[j]) << "argmax " << j;
  }
}

template <class Backend>
void check_relu(Backend& backend, std::size_t count) {
  Rng rng{15, count};
  std::vector<float> x = random_floats(count, rng);
  x[0] = 0.0f;
  x[1] = -0.0f;
  const std::vector<float> dy = random_floats(count, rng);
  std::vector<float> params;
  const LayerResult want =
      cpu_layer({.type = "relu"}, {static_cast<int>(count)}, 1, x, dy, true, params);
  const LayerResult got = backend.relu(x, dy);
  expect_bits(got.y, want.y, "y");
  expect_bits(got.dx, want.dx, "dx");
}

/// loss_tol / grad_tol: relative; 0 demands identical results (same libm on the host).
template <class Backend>
void check_softmax(Backend& backend, int n, int k, float scale, double loss_tol, double grad_tol) {
  SCOPED_TRACE(::testing::Message() << "softmax n=" << n << " k=" << k);
  Rng rng{16, static_cast<std::uint64_t>(n * 100 + k)};
  std::vector<float> logits = random_floats(static_cast<std::size_t>(n) * k, rng, -5.0f, 5.0f);
  std::vector<model::Label> labels(n);
  for (auto& l : labels) l = static_cast<model::Label>(rng.below(k));
  // Sample 0: huge logits (stability), sample 1: a tie for the maximum (first one wins).
  if (n > 1) {
    for (int j = 0; j < k; ++j) logits[j] = 1000.0f * (j % 3) - 500.0f;
    std::fill_n(logits.begin() + k, k, 0.5f);
    labels[1] = 0;
  }
  model::Tensor grad;
  const model::LossResult want =
      model::softmax_cross_entropy(tensor({n, k}, logits), labels, scale, &grad);
  const SoftmaxResult got = backend.softmax(logits, labels, n, k, scale);
  ASSERT_EQ(got.loss.size(), static_cast<std::size_t>(n));
  double loss_sum = 0.0;
  int correct = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(got.status[i], 0);
    loss_sum += got.loss[i];
    correct += got.status[i];
  }
  EXPECT_EQ(correct, want.correct);
  if (loss_tol == 0.0) {
    EXPECT_EQ(loss_sum, want.loss_sum);
    expect_bits(got.grad, grad.data, "dlogits");
  } else {
    EXPECT_NEAR(loss_sum, want.loss_sum, loss_tol * std::max(1.0, std::fabs(want.loss_sum)));
    expect_close(got.grad, grad.data, "dlogits", grad_tol, 1e-9);
  }
  // A label out of range is flagged per sample (-1 - label).
  labels[n - 1] = static_cast<model::Label>(k + 2);
  const SoftmaxResult bad = backend.softmax(logits, labels, n, k, scale);
  EXPECT_EQ(bad.status[n - 1], -1 - (k + 2));
}

template <class Backend>
void check_sgd(Backend& backend, float momentum, float weight_decay) {
  SCOPED_TRACE(::testing::Message() << "sgd momentum " << momentum << " wd " << weight_decay);
  Rng rng{17, 1};
  const std::size_t count = 1000;
  std::vector<float> w = random_floats(count, rng);
  std::vector<float> cpu_w = w;
  std::vector<float> v(count, 0.0f);
  model::Sgd sgd({.lr = 0.05f, .momentum = momentum, .weight_decay = weight_decay}, count);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> g = random_floats(count, rng);
    const float lr = 0.05f / static_cast<float>(step + 1);
    sgd.set_lr(lr);
    sgd.step(cpu_w, g);
    backend.sgd(w, g, v, lr, momentum, weight_decay, step == 0);
    expect_bits(w, cpu_w, "params after step " + std::to_string(step));
    expect_bits(v, std::vector<float>(sgd.velocity().begin(), sgd.velocity().end()),
                "velocity after step " + std::to_string(step));
  }
}

// ---- whole models ----------------------------------------------------------------------

/// A small MLP and a small CNN covering every layer type (strided, padded and overlapping).
inline std::vector<LayerSpec> mlp_specs() {
  return {{.type = "flatten"},
          {.type = "linear", .out = 24},
          {.type = "relu"},
          {.type = "linear", .out = 10}};
}
inline model::SampleShape mlp_input() {
  return {1, 6, 6};
}

inline std::vector<LayerSpec> cnn_specs() {
  return {{.type = "conv2d", .out = 4, .kernel = 3, .stride = 1, .padding = 1},
          {.type = "relu"},
          {.type = "maxpool", .kernel = 2, .stride = 0},
          {.type = "conv2d", .out = 5, .kernel = 3, .stride = 2, .padding = 1},
          {.type = "relu"},
          {.type = "maxpool", .kernel = 2, .stride = 1},
          {.type = "flatten"},
          {.type = "linear", .out = 16},
          {.type = "relu"},
          {.type = "linear", .out = 10}};
}
inline model::SampleShape cnn_input() {
  return {2, 10, 10};
}

/// A deterministic batch of `n` samples for `input`.
struct Batch {
  std::vector<float> images;
  std::vector<model::Label> labels;
};
inline Batch make_batch(const model::SampleShape& input, int n, int classes, std::uint64_t seed) {
  Rng rng{18, seed};
  Batch b;
  b.images = random_floats(model::Tensor::count_of(input) * n, rng);
  b.labels.resize(n);
  for (auto& l : b.labels) l = static_cast<model::Label>(rng.below(classes));
  return b;
}

inline model::Tensor batch_tensor(const model::SampleShape& input, int n,
                                  const std::vector<float>& images) {
  std::vector<int> shape{n};
  shape.insert(shape.end(), input.begin(), input.end());
  return tensor(shape, images);
}

}  // namespace conflux::gpu::testing
