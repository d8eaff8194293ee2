#pragma once
/// @file layer_math.hpp
/// The GPU layers, written once for two executors: the CUDA one (src/gpu, kernels and cuBLAS)
/// and HostExecutor (host_executor.hpp), which runs the same element functions and GEMM
/// descriptors on the CPU so that tests check every index computation of the GPU path on
/// machines without a GPU. Free of CUDA types; compiled by nvcc and g++.
///
/// An executor provides:
///   - for_each(count, f): calls f(i) for every i in [0, count), in any order and in parallel
///     (f writes only element i's outputs);
///   - gemm(const Gemm&): cuBLAS's column-major SGEMM, C = op(A) op(B) + beta C;
///   - zero(ptr, count): sets `count` elements to 0.
///
/// Semantics are those of the CPU layers (conflux/model/*.hpp). Everything but the GEMMs and the
/// conv2d bias gradient (a GEMV) is the same arithmetic in the same order, hence bit-identical
/// to the CPU layers; GEMM results differ by summation order only.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "conflux/model/tensor.hpp"

#include "conflux/model/im2col.hpp"

#if defined(__CUDACC__)
#define CONFLUX_HD __host__ __device__
#else
#define CONFLUX_HD
#endif

namespace conflux::gpu::math {

// Float operations that nvcc never fuses into an FMA (it does by default, the CPU build cannot),
// so that the element-wise steps round exactly like the CPU code.
CONFLUX_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
CONFLUX_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
CONFLUX_HD inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

/// One column-major SGEMM with alpha = 1, exactly cublasSgemm's arguments:
/// C[m x n] = op(A)[m x k] * op(B)[k x n] + beta * C, op(X) = X^T when trans_X.
/// A row-major [r, c] matrix is a column-major [c x r] one with leading dimension c.
struct Gemm {
  bool trans_a = false;
  bool trans_b = false;
  int m = 0;
  int n = 0;
  int k = 0;
  const float* a = nullptr;
  int lda = 0;
  const float* b = nullptr;
  int ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  int ldc = 0;
};

// ---- element functions -------------------------------------------------------------------

/// out[i] = value.
struct Fill {
  float* out;
  float value;
  CONFLUX_HD void operator()(std::size_t i) const { out[i] = value; }
};

/// y[r, j] = bias[j] for a row-major [rows, width] y (linear bias, before the GEMM adds x W^T).
struct BroadcastRows {
  float* y;
  const float* bias;
  std::size_t width;
  CONFLUX_HD void operator()(std::size_t i) const { y[i] = bias[i % width]; }
};

/// sums[j] = sum over r of x[r, j], in row order from 0 (the CPU linear bias gradient).
struct ColumnSums {
  const float* x;
  float* sums;
  std::size_t rows;
  std::size_t width;
  CONFLUX_HD void operator()(std::size_t j) const {
    float s = 0.0f;
    for (std::size_t r = 0; r < rows; ++r) s = add_rn(s, x[r * width + j]);
    sums[j] = s;
  }
};

/// y = max(x, 0).
struct ReluForward {
  const float* x;
  float* y;
  CONFLUX_HD void operator()(std::size_t i) const { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
};

/// dx = x > 0 ? dy : 0.
struct ReluBackward {
  const float* x;
  const float* dy;
  float* dx;
  CONFLUX_HD void operator()(std::size_t i) const { dx[i] = x[i] > 0.0f ? dy[i] : 0.0f; }
};

/// Max-pool geometry over planes of [height, width] (planes = N * C).
struct PoolShape {
  std::size_t planes = 0;
  int height = 0;
  int width = 0;
  int kernel = 1;
  int stride = 1;
  int out_height = 0;  ///< (height - kernel) / stride + 1
  int out_width = 0;
};

/// One output element per i: the window maximum (first one on ties, row-major) and its index
/// within the input plane.
struct MaxPoolForward {
  const float* x;
  float* y;
  std::int32_t* argmax;
  PoolShape s;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t out_plane = static_cast<std::size_t>(s.out_height) * s.out_width;
    const std::size_t plane = i / out_plane;
    const int r = static_cast<int>(i % out_plane);
    const int oh = r / s.out_width;
    const int ow = r % s.out_width;
    const float* xp = x + plane * static_cast<std::size_t>(s.height) * s.width;
    const int top = oh * s.stride * s.width + ow * s.stride;
    int best = top;
    float best_value = xp[top];
    for (int ki = 0; ki < s.kernel; ++ki) {
      const int row = top + ki * s.width;
      for (int kj = 0; kj < s.kernel; ++kj) {
        if (xp[row + kj] > best_value) {
          best_value = xp[row + kj];
          best = row + kj;
        }
      }
    }
    y[i] = best_value;
    argmax[i] = best;
  }
};

/// One input element per i: the sum of the output gradients whose window maximum it was, in
/// output order (a gather rather than the CPU's scatter: no atomics, same sums in the same
/// order, so bit-identical also for overlapping windows).
struct MaxPoolBackward {
  const float* dy;
  const std::int32_t* argmax;
  float* dx;
  PoolShape s;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t in_plane = static_cast<std::size_t>(s.height) * s.width;
    const std::size_t out_plane = static_cast<std::size_t>(s.out_height) * s.out_width;
    const std::size_t plane = i / in_plane;
    const int q = static_cast<int>(i % in_plane);
    const int h = q / s.width;
    const int w = q % s.width;
    // Windows oh with oh*stride <= h <= oh*stride + kernel - 1, likewise for columns.
    const int oh_lo = h - s.kernel + 1 > 0 ? (h - s.kernel + s.stride) / s.stride : 0;
    const int ow_lo = w - s.kernel + 1 > 0 ? (w - s.kernel + s.stride) / s.stride : 0;
    const int oh_hi = h / s.stride < s.out_height - 1 ? h / s.stride : s.out_height - 1;
    const int ow_hi = w / s.stride < s.out_width - 1 ? w / s.stride : s.out_width - 1;
    const float* g = dy + plane * out_plane;
    const std::int32_t* a = argmax + plane * out_plane;
    float sum = 0.0f;
    for (int oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int ow = ow_lo; ow <= ow_hi; ++ow) {
        const int j = oh * s.out_width + ow;
        if (a[j] == q) sum = add_rn(sum, g[j]);
      }
    }
    dx[i] = sum;
  }
};

/// Convolution geometry of a batch: n images of g (g.out_* filled in).
struct ConvShape {
  int n = 0;
  model::ConvGeometry g;
  int out_channels = 0;

  /// Rows of the patch matrix: C * k * k.
  std::size_t rows() const noexcept { return g.col_rows(); }
  /// Output pixels per image: H' * W'.
  std::size_t pixels() const noexcept { return g.col_cols(); }
  /// Floats of the batch patch matrix [rows, n * pixels].
  std::size_t col_floats() const noexcept { return rows() * n * pixels(); }
  /// Floats of one channel-major [out, n * pixels] matrix (GEMM result, permuted dY).
  std::size_t out_floats() const noexcept {
    return static_cast<std::size_t>(out_channels) * n * pixels();
  }
};

/// Patch matrix of the whole batch, [C*k*k, n*H'*W']: row (c*k + ki)*k + kj, column
/// i*H'*W' + oh*W' + ow holds pixel (i, c, oh*s - p + ki, ow*s - p + kj), 0 outside the image
/// (the CPU im2col of each image side by side).
struct Im2col {
  const float* x;
  float* col;
  int n;
  model::ConvGeometry g;
  CONFLUX_HD void operator()(std::size_t idx) const {
    const std::size_t pixels = static_cast<std::size_t>(g.out_height) * g.out_width;
    const std::size_t ncols = pixels * n;
    const int r = static_cast<int>(idx / ncols);
    const std::size_t rem = idx % ncols;
    const std::size_t i = rem / pixels;
    const int pc = static_cast<int>(rem % pixels);
    const int oh = pc / g.out_width;
    const int ow = pc % g.out_width;
    const int kk = g.kernel * g.kernel;
    const int c = r / kk;
    const int ki = (r % kk) / g.kernel;
    const int kj = r % g.kernel;
    const int ih = oh * g.stride - g.padding + ki;
    const int iw = ow * g.stride - g.padding + kj;
    float v = 0.0f;
    if (ih >= 0 && ih < g.height && iw >= 0 && iw < g.width) {
      v = x[((i * g.channels + c) * g.height + ih) * g.width + iw];
    }
    col[idx] = v;
  }
};

/// Adjoint of Im2col, one input pixel per idx: the sum of the patch entries copied from it, in
/// (ki, kj) order like the CPU col2im, so bit-identical to it.
struct Col2im {
  const float* col;
  float* x;
  int n;
  model::ConvGeometry g;
  CONFLUX_HD void operator()(std::size_t idx) const {
    const std::size_t pixels = static_cast<std::size_t>(g.out_height) * g.out_width;
    const std::size_t ncols = pixels * n;
    const int w = static_cast<int>(idx % g.width);
    std::size_t t = idx / g.width;
    const int h = static_cast<int>(t % g.height);
    t /= g.height;
    const int c = static_cast<int>(t % g.channels);
    const std::size_t i = t / g.channels;
    float sum = 0.0f;
    for (int ki = 0; ki < g.kernel; ++ki) {
      const int oh_s = h + g.padding - ki;  // oh * stride
      if (oh_s < 0 || oh_s % g.stride != 0 || oh_s / g.stride >= g.out_height) continue;
      const int oh = oh_s / g.stride;
      for (int kj = 0; kj < g.kernel; ++kj) {
        const int ow_s = w + g.padding - kj;
        if (ow_s < 0 || ow_s % g.stride != 0 || ow_s / g.stride >= g.out_width) continue;
        const int ow = ow_s / g.stride;
        const std::size_t r = (static_cast<std::size_t>(c) * g.kernel + ki) * g.kernel + kj;
        sum = add_rn(sum,
                     col[r * ncols + i * pixels + static_cast<std::size_t>(oh) * g.out_width + ow]);
      }
    }
    x[idx] = sum;
  }
};

/// y[i, o, p] = src[o, i*P + p] + bias[o]: channel-major GEMM result to the batch-major output.
struct ChannelToBatchMajor {
  const float* src;
  const float* bias;
  float* y;
  int n;
  int channels;
  std::size_t pixels;
  CONFLUX_HD void operator()(std::size_t idx) const {
    const std::size_t p = idx % pixels;
    const std::size_t t = idx / pixels;
    const std::size_t o = t % channels;
    const std::size_t i = t / channels;
    y[idx] = add_rn(src[(o * n + i) * pixels + p], bias[o]);
  }
};

/// dst[o, i*P + p] = dy[i, o, p]: batch-major gradient to channel-major for the GEMMs.
struct BatchToChannelMajor {
  const float* dy;
  float* dst;
  int n;
  int channels;
  std::size_t pixels;
  CONFLUX_HD void operator()(std::size_t idx) const {
    const std::size_t p = idx % pixels;
    const std::size_t t = idx / pixels;
    const std::size_t i = t % n;
    const std::size_t o = t / n;
    dst[idx] = dy[(i * channels + o) * pixels + p];
  }
};

/// Softmax cross-entropy of sample i, in double like the CPU loss: loss[i], status[i] (1 if the
/// first arg-max logit is the label, 0 if not, 2 for a skipped sample (model::kSkippedLabel: no
/// loss, zero gradient), -1 - label for a label out of range) and, when grad is
/// non-null, grad[i, :] = grad_scale * (softmax - onehot).
struct SoftmaxCrossEntropy {
  const float* logits;
  const model::Label* labels;
  int k;
  float grad_scale;
  double* loss;
  std::int32_t* status;
  float* grad;
  CONFLUX_HD void operator()(std::size_t i) const {
    const float* x = logits + i * k;
    float* g = grad != nullptr ? grad + i * k : nullptr;
    const int label = labels[i];
    if (label < 0 || label >= k) {  // a negative label other than skipped reads as label k
      loss[i] = 0.0;
      status[i] = label == model::kSkippedLabel ? 2 : -1 - (label < 0 ? k : label);
      if (g != nullptr)
        for (int j = 0; j < k; ++j) g[j] = 0.0f;
      return;
    }
    int arg = 0;
    for (int j = 1; j < k; ++j)
      if (x[j] > x[arg]) arg = j;
    const double max = x[arg];
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += ::exp(static_cast<double>(x[j]) - max);
    const double log_sum = ::log(sum);
    loss[i] = log_sum + max - static_cast<double>(x[label]);
    status[i] = arg == label ? 1 : 0;
    if (g != nullptr) {
      for (int j = 0; j < k; ++j) {
        const double p = ::exp(static_cast<double>(x[j]) - max - log_sum);
        g[j] = static_cast<float>(grad_scale * (p - (j == label ? 1.0 : 0.0)));
      }
    }
  }
};

/// Which update SgdStep applies (model::Sgd's three loops).
enum class SgdMode : int {
  kPlain = 0,     ///< momentum 0: w -= lr * d
  kFirst = 1,     ///< first step with momentum: v = d, w -= lr * d
  kMomentum = 2,  ///< v = momentum * v + d, w -= lr * v
};

/// One parameter of model::Sgd::step, operation by operation (d = g + wd * w when wd != 0).
struct SgdStep {
  float* w;
  const float* g;
  float* v;
  float lr;
  float momentum;
  float weight_decay;
  SgdMode mode;
  CONFLUX_HD void operator()(std::size_t i) const {
    const float d = weight_decay != 0.0f ? add_rn(g[i], mul_rn(weight_decay, w[i])) : g[i];
    if (mode == SgdMode::kPlain) {
      w[i] = sub_rn(w[i], mul_rn(lr, d));
    } else if (mode == SgdMode::kFirst) {
      v[i] = d;
      w[i] = sub_rn(w[i], mul_rn(lr, d));
    } else {
      const float vi = add_rn(mul_rn(momentum, v[i]), d);
      v[i] = vi;
      w[i] = sub_rn(w[i], mul_rn(lr, vi));
    }
  }
};

// ---- layers ------------------------------------------------------------------------------

/// Linear layer on a batch: x [n, in], weight [out, in], bias [out], y [n, out].
struct LinearShape {
  int n = 0;
  int in = 0;
  int out = 0;
};

/// y = x W^T + b (bias first, then the GEMM adds onto it, as on the CPU).
template <class Exec>
void linear_forward(Exec& ex, const float* x, LinearShape s, const float* weight, const float* bias,
                    float* y) {
  if (s.n == 0) return;
  ex.for_each(static_cast<std::size_t>(s.n) * s.out,
              BroadcastRows{y, bias, static_cast<std::size_t>(s.out)});
  // y^T [out x n] = (W as col-major [in x out])^T * (x as col-major [in x n])
  ex.gemm(Gemm{.trans_a = true,
               .trans_b = false,
               .m = s.out,
               .n = s.n,
               .k = s.in,
               .a = weight,
               .lda = s.in,
               .b = x,
               .ldb = s.in,
               .beta = 1.0f,
               .c = y,
               .ldc = s.out});
}

/// dW = dY^T X, db = column sums of dY (exact CPU order), dX = dY W unless dx is null.
/// Overwrites the gradients; an empty batch gives zero parameter gradients.
template <class Exec>
void linear_backward(Exec& ex, const float* x, const float* dy, LinearShape s, const float* weight,
                     float* dweight, float* dbias, float* dx) {
  if (s.n == 0) {
    ex.zero(dweight, static_cast<std::size_t>(s.out) * s.in);
    ex.zero(dbias, static_cast<std::size_t>(s.out));
    return;
  }
  // dW^T [in x out] = (x as col-major [in x n]) * (dY as col-major [out x n])^T
  ex.gemm(Gemm{.trans_a = false,
               .trans_b = true,
               .m = s.in,
               .n = s.out,
               .k = s.n,
               .a = x,
               .lda = s.in,
               .b = dy,
               .ldb = s.out,
               .beta = 0.0f,
               .c = dweight,
               .ldc = s.in});
  ex.for_each(static_cast<std::size_t>(s.out), ColumnSums{dy, dbias, static_cast<std::size_t>(s.n),
                                                          static_cast<std::size_t>(s.out)});
  if (dx == nullptr) return;
  // dX^T [in x n] = (W as col-major [in x out]) * (dY as col-major [out x n])
  ex.gemm(Gemm{.trans_a = false,
               .trans_b = false,
               .m = s.in,
               .n = s.n,
               .k = s.out,
               .a = weight,
               .lda = s.in,
               .b = dy,
               .ldb = s.out,
               .beta = 0.0f,
               .c = dx,
               .ldc = s.in});
}

/// Conv2d forward: col = im2col of the batch ([C*k*k, n*H'*W'], kept for backward),
/// tmp = W col ([out, n*H'*W']), y[i, o, :] = tmp[o, i-th block] + b[o].
/// col holds s.col_floats() and tmp s.out_floats() floats.
template <class Exec>
void conv2d_forward(Exec& ex, const float* x, const ConvShape& s, const float* weight,
                    const float* bias, float* col, float* tmp, float* y) {
  if (s.n == 0) return;
  const int rows = static_cast<int>(s.rows());
  const int ncols = static_cast<int>(s.pixels() * s.n);
  ex.for_each(s.col_floats(), Im2col{x, col, s.n, s.g});
  // tmp^T [ncols x out] = (col as col-major [ncols x rows]) * (W as col-major [rows x out])
  ex.gemm(Gemm{.trans_a = false,
               .trans_b = false,
               .m = ncols,
               .n = s.out_channels,
               .k = rows,
               .a = col,
               .lda = ncols,
               .b = weight,
               .ldb = rows,
               .beta = 0.0f,
               .c = tmp,
               .ldc = ncols});
  ex.for_each(s.out_floats(), ChannelToBatchMajor{tmp, bias, y, s.n, s.out_channels, s.pixels()});
}

/// Conv2d backward from the col of the matching forward: tmp = dY channel-major,
/// dW = tmp col^T, db = tmp * ones (ones: n*H'*W' floats of 1), and unless dx is null
/// dcol = W^T tmp ([C*k*k, n*H'*W'], s.col_floats() floats) folded back by col2im.
/// Overwrites the gradients; an empty batch gives zero parameter gradients.
template <class Exec>
void conv2d_backward(Exec& ex, const float* dy, const ConvShape& s, const float* weight,
                     const float* col, const float* ones, float* tmp, float* dcol, float* dweight,
                     float* dbias, float* dx) {
  const int rows = static_cast<int>(s.rows());
  if (s.n == 0) {
    ex.zero(dweight, static_cast<std::size_t>(s.out_channels) * rows);
    ex.zero(dbias, static_cast<std::size_t>(s.out_channels));
    return;
  }
  const int ncols = static_cast<int>(s.pixels() * s.n);
  ex.for_each(s.out_floats(), BatchToChannelMajor{dy, tmp, s.n, s.out_channels, s.pixels()});
  // dW^T [rows x out] = (col as col-major [ncols x rows])^T * (tmp as col-major [ncols x out])
  ex.gemm(Gemm{.trans_a = true,
               .trans_b = false,
               .m = rows,
               .n = s.out_channels,
               .k = ncols,
               .a = col,
               .lda = ncols,
               .b = tmp,
               .ldb = ncols,
               .beta = 0.0f,
               .c = dweight,
               .ldc = rows});
  // db [out x 1] = (tmp as col-major [ncols x out])^T * ones [ncols x 1]
  ex.gemm(Gemm{.trans_a = true,
               .trans_b = false,
               .m = s.out_channels,
               .n = 1,
               .k = ncols,
               .a = tmp,
               .lda = ncols,
               .b = ones,
               .ldb = ncols,
               .beta = 0.0f,
               .c = dbias,
               .ldc = s.out_channels});
  if (dx == nullptr) return;
  // dcol^T [ncols x rows] = (tmp as col-major [ncols x out]) * (W as col-major [rows x out])^T
  ex.gemm(Gemm{.trans_a = false,
               .trans_b = true,
               .m = ncols,
               .n = rows,
               .k = s.out_channels,
               .a = tmp,
               .lda = ncols,
               .b = weight,
               .ldb = rows,
               .beta = 0.0f,
               .c = dcol,
               .ldc = ncols});
  ex.for_each(static_cast<std::size_t>(s.n) * s.g.image_size(), Col2im{dcol, dx, s.n, s.g});
}

/// Max-pool forward: y and argmax hold planes * out_height * out_width elements.
template <class Exec>
void maxpool_forward(Exec& ex, const float* x, const PoolShape& s, float* y, std::int32_t* argmax) {
  ex.for_each(s.planes * s.out_height * s.out_width, MaxPoolForward{x, y, argmax, s});
}

/// Max-pool backward: routes each output gradient to its window's maximum.
template <class Exec>
void maxpool_backward(Exec& ex, const float* dy, const std::int32_t* argmax, const PoolShape& s,
                      float* dx) {
  ex.for_each(s.planes * s.height * s.width, MaxPoolBackward{dy, argmax, dx, s});
}

/// ReLU forward on `count` elements.
template <class Exec>
void relu_forward(Exec& ex, const float* x, std::size_t count, float* y) {
  ex.for_each(count, ReluForward{x, y});
}

/// ReLU backward on `count` elements.
template <class Exec>
void relu_backward(Exec& ex, const float* x, const float* dy, std::size_t count, float* dx) {
  ex.for_each(count, ReluBackward{x, dy, dx});
}

/// Per-sample softmax cross-entropy of logits [n, k] (see SoftmaxCrossEntropy).
template <class Exec>
void softmax_cross_entropy(Exec& ex, const float* logits, const model::Label* labels, int n, int k,
                           float grad_scale, double* loss, std::int32_t* status, float* grad) {
  ex.for_each(static_cast<std::size_t>(n),
              SoftmaxCrossEntropy{logits, labels, k, grad_scale, loss, status, grad});
}

/// One model::Sgd step over `count` parameters; `first_step` as model::Sgd::started() == false.
template <class Exec>
void sgd_step(Exec& ex, float* params, const float* grads, float* velocity, std::size_t count,
              float lr, float momentum, float weight_decay, bool first_step) {
  const SgdMode mode = momentum == 0.0f ? SgdMode::kPlain
                       : first_step     ? SgdMode::kFirst
                                        : SgdMode::kMomentum;
  ex.for_each(count, SgdStep{params, grads, velocity, lr, momentum, weight_decay, mode});
}

}  // namespace conflux::gpu::math
