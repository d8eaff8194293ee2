#pragma once
/// @file pooling.hpp
/// maxpool, avgpool and globalavgpool's device kernels on channels-last images. Forward is one
/// thread per output element; backward one thread per input element gathering the gradients
/// of the windows that used it, in output order: no atomics, and the sums of the CPU's
/// scatter in the same order (bit-identical to it).

#include <cstddef>
#include <cstdint>

#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/common.hpp"
#include "conflux/model/pooling.hpp"

namespace conflux::gpu::kernels {

/// A pooling window geometry over channels-last images [n, h, w, c].
struct PoolGeometry {
  int c = 0, h = 0, w = 0;     ///< input
  int oh = 0, ow = 0;          ///< output
  int kernel = 1, stride = 1;  ///< square window
  int padding = 0;             ///< each side (max pooling only)

  /// Where element i of a channels-last [n, rows, cols, c] tensor is.
  struct Position {
    std::size_t n;
    int y, x, c;
  };
  CONFLUX_HD static Position position(std::size_t i, int rows, int cols, int channels) {
    const std::size_t pixel = i / channels;
    return {pixel / (static_cast<std::size_t>(rows) * cols),
            static_cast<int>((pixel / cols) % rows), static_cast<int>(pixel % cols),
            static_cast<int>(i % channels)};
  }
  /// Element i of the output, and of the input.
  CONFLUX_HD Position output_position(std::size_t i) const { return position(i, oh, ow, c); }
  CONFLUX_HD Position input_position(std::size_t i) const { return position(i, h, w, c); }

  /// The output rows (or columns: same formula) whose windows cover input row `i` of a
  /// dimension with `out` outputs: [first, last], empty when first > last.
  CONFLUX_HD void covering(int i, int out, int& first, int& last) const {
    const int hi = i + padding;  // covered by o when o*stride <= hi < o*stride + kernel
    first = hi - kernel + 1 <= 0 ? 0 : (hi - kernel + 1 + stride - 1) / stride;
    last = hi / stride;
    if (last > out - 1) last = out - 1;
  }
};

/// One output per i: the window maximum (padding never wins; ties: the first in row-major
/// window order, as the CPU) and its position y * w + x within the sample's plane.
template <class T>
struct MaxPoolForward {
  const T* x;
  T* y;
  std::int32_t* arg;
  PoolGeometry g;
  CONFLUX_HD void operator()(std::size_t i) const {
    const auto [n, oy, ox, ch] = g.output_position(i);
    const int y0 = oy * g.stride - g.padding, x0 = ox * g.stride - g.padding;
    const int ya = y0 < 0 ? 0 : y0, xa = x0 < 0 ? 0 : x0;
    const int yb = y0 + g.kernel < g.h ? y0 + g.kernel : g.h;
    const int xb = x0 + g.kernel < g.w ? x0 + g.kernel : g.w;
    const T* plane = x + n * static_cast<std::size_t>(g.h) * g.w * g.c;
    int best = ya * g.w + xa;
    float value = load(plane, static_cast<std::size_t>(best) * g.c + ch);
    for (int yy = ya; yy < yb; ++yy) {
      for (int xx = xa; xx < xb; ++xx) {
        const float v = load(plane, (static_cast<std::size_t>(yy) * g.w + xx) * g.c + ch);
        if (v > value) {  // strict: the first maximum stays
          value = v;
          best = yy * g.w + xx;
        }
      }
    }
    store(y, i, value);
    arg[i] = best;
  }
};

/// One input element per i: the sum of the gradients of the outputs whose maximum it was.
template <class T>
struct MaxPoolBackward {
  const T* dy;
  const std::int32_t* arg;
  T* dx;
  PoolGeometry g;
  CONFLUX_HD void operator()(std::size_t i) const {
    const auto [n, yy, xx, ch] = g.input_position(i);
    const int me = yy * g.w + xx;
    int oy0, oy1, ox0, ox1;
    g.covering(yy, g.oh, oy0, oy1);
    g.covering(xx, g.ow, ox0, ox1);
    float sum = 0.0f;
    const std::size_t base = n * static_cast<std::size_t>(g.oh) * g.ow;
    for (int oy = oy0; oy <= oy1; ++oy) {
      for (int ox = ox0; ox <= ox1; ++ox) {
        const std::size_t o = (base + static_cast<std::size_t>(oy) * g.ow + ox) * g.c + ch;
        if (arg[o] == me) sum += load(dy, o);
      }
    }
    store(dx, i, sum);
  }
};

/// One output per i: the window's sum in row-major order, times 1 / kernel^2 (no padding).
template <class T>
struct AvgPoolForward {
  const T* x;
  T* y;
  PoolGeometry g;
  float scale;
  CONFLUX_HD void operator()(std::size_t i) const {
    const auto [n, oy, ox, ch] = g.output_position(i);
    const T* plane = x + n * static_cast<std::size_t>(g.h) * g.w * g.c;
    float sum = 0.0f;
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        const std::size_t yy = static_cast<std::size_t>(oy) * g.stride + ky;
        const std::size_t xx = static_cast<std::size_t>(ox) * g.stride + kx;
        sum += load(plane, (yy * g.w + xx) * g.c + ch);
      }
    }
    store(y, i, sum * scale);
  }
};

/// One input element per i: the sum of dy * scale over the windows that cover it, in order.
template <class T>
struct AvgPoolBackward {
  const T* dy;
  T* dx;
  PoolGeometry g;
  float scale;
  CONFLUX_HD void operator()(std::size_t i) const {
    const auto [n, yy, xx, ch] = g.input_position(i);
    int oy0, oy1, ox0, ox1;
    g.covering(yy, g.oh, oy0, oy1);
    g.covering(xx, g.ow, ox0, ox1);
    float sum = 0.0f;
    const std::size_t base = n * static_cast<std::size_t>(g.oh) * g.ow;
    for (int oy = oy0; oy <= oy1; ++oy) {
      for (int ox = ox0; ox <= ox1; ++ox) {
        sum += load(dy, (base + static_cast<std::size_t>(oy) * g.ow + ox) * g.c + ch) * scale;
      }
    }
    store(dx, i, sum);
  }
};

/// y[n, c] = (sum over the plane of x[n, :, :, c], in row-major order) * scale.
template <class T>
struct GlobalPoolForward {
  const T* x;
  T* y;
  std::size_t c, plane;
  float scale;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t ch = i % c, n = i / c;
    const T* p = x + n * plane * c + ch;
    float sum = 0.0f;
    for (std::size_t k = 0; k < plane; ++k) sum += load(p, k * c);
    store(y, i, sum * scale);
  }
};

/// dx[n, y, x, c] = dy[n, c] * scale.
template <class T>
struct GlobalPoolBackward {
  const T* dy;
  T* dx;
  std::size_t c, plane;
  float scale;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t ch = i % c, n = i / (plane * c);
    store(dx, i, load(dy, n * c + ch) * scale);
  }
};

/// The geometry of a pool of `spec` on per-sample input `in` ({C, H, W}).
inline PoolGeometry pool_geometry(const LayerSpec& spec, const model::SampleShape& in,
                                  const model::SampleShape& out) {
  return {.c = in.at(0),
          .h = in.at(1),
          .w = in.at(2),
          .oh = out.at(1),
          .ow = out.at(2),
          .kernel = spec.kernel,
          .stride = model::pool_stride(spec.kernel, spec.stride),
          .padding = spec.padding};
}

template <class Ex>
class MaxPoolKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit MaxPoolKernel(const DeviceLayerSpec& s)
      : g_(pool_geometry(*s.spec, s.inputs.at(0), s.output)), dtype_(s.activations) {}

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    out.resize({x.batch(), g_.c, g_.oh, g_.ow}, dtype_);
    ensure(arg_, out.size());
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(out.size(),
                  MaxPoolForward<T>{x.template data<T>(), out.template data<T>(), arg_.data(), g_});
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(gx->size(), MaxPoolBackward<T>{grad_out.template data<T>(), arg_.data(),
                                                 gx->template data<T>(), g_});
    });
  }

 private:
  PoolGeometry g_;
  DType dtype_;
  typename Ex::template Buffer<std::int32_t> arg_;
};

template <class Ex>
class AvgPoolKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit AvgPoolKernel(const DeviceLayerSpec& s)
      : g_(pool_geometry(*s.spec, s.inputs.at(0), s.output)),
        scale_(1.0f / static_cast<float>(g_.kernel * g_.kernel)),
        dtype_(s.activations) {}

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    const Tensor& x = *in[0];
    out.resize({x.batch(), g_.c, g_.oh, g_.ow}, dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(out.size(),
                  AvgPoolForward<T>{x.template data<T>(), out.template data<T>(), g_, scale_});
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(gx->size(), AvgPoolBackward<T>{grad_out.template data<T>(),
                                                 gx->template data<T>(), g_, scale_});
    });
  }

 private:
  PoolGeometry g_;
  float scale_;
  DType dtype_;
};

template <class Ex>
class GlobalAvgPoolKernel final : public DeviceLayer<Ex> {
 public:
  using typename DeviceLayer<Ex>::Tensor;
  using typename DeviceLayer<Ex>::Inputs;
  using typename DeviceLayer<Ex>::InputGrads;

  explicit GlobalAvgPoolKernel(const DeviceLayerSpec& s)
      : c_(static_cast<std::size_t>(s.inputs.at(0).at(0))),
        plane_(static_cast<std::size_t>(s.inputs.at(0).at(1)) * s.inputs.at(0).at(2)),
        scale_(1.0f / static_cast<float>(plane_)),
        dtype_(s.activations) {}

  void forward(Ex& ex, const DevicePass& /*pass*/, Inputs in, Tensor& out) override {
    out.resize({in[0]->batch(), static_cast<int>(c_)}, dtype_);
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(out.size(), GlobalPoolForward<T>{in[0]->template data<T>(),
                                                   out.template data<T>(), c_, plane_, scale_});
    });
  }
  void backward(Ex& ex, const DevicePass& /*pass*/, Inputs in, const Tensor& grad_out,
                InputGrads grad_in) override {
    Tensor* gx = this->input_grad(in, grad_in, 0, dtype_);
    if (gx == nullptr) return;
    with_element(dtype_, [&](auto zero) {
      using T = decltype(zero);
      ex.for_each(gx->size(), GlobalPoolBackward<T>{grad_out.template data<T>(),
                                                    gx->template data<T>(), c_, plane_, scale_});
    });
  }

 private:
  std::size_t c_, plane_;
  float scale_;
  DType dtype_;
};

}  // namespace conflux::gpu::kernels
