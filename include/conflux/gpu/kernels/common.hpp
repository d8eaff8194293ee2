#pragma once
/// @file common.hpp
/// Element functions and steps the layers' device kernels share: ReLU maps, channel-last bias,
/// deterministic per-channel sums, layout conversions and casts. Each runs on any executor
/// (gpu/device_layer.hpp) and any element type T (float or Bf16): values are loaded as floats,
/// computed in float, and stored rounded to T.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "conflux/core/host_device.hpp"
#include "conflux/data/transform/normalise.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/precision.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::gpu::kernels {

/// y = model::relu_value(x).
template <class T>
struct ReluForward {
  const T* x;
  T* y;
  CONFLUX_HD void operator()(std::size_t i) const { store(y, i, model::relu_value(load(x, i))); }
};

/// dx = model::relu_gated(gate, dy); `gate` is the ReLU's input or output.
template <class T>
struct ReluGate {
  const T* gate;
  const T* dy;
  T* dx;
  CONFLUX_HD void operator()(std::size_t i) const {
    store(dx, i, model::relu_gated(load(gate, i), load(dy, i)));
  }
};

/// y[i] = y[i] + bias[i % channels], then the ReLU when `relu` (channels-last rows).
template <class T>
struct AddChannelBias {
  T* y;
  const float* bias;
  std::size_t channels;
  bool relu;
  CONFLUX_HD void operator()(std::size_t i) const {
    const float v = load(y, i) + bias[i % channels];
    store(y, i, relu ? model::relu_value(v) : v);
  }
};

/// sums[p * channels + c] = sum over the rows of chunk p of x[r, c] and, with y,
/// products[p * channels + c] = the same of x[r, c] * y[r, c], in double and in row order, in
/// one pass over x: the first level of a deterministic reduction. With a gate, x is first gated
/// by it as ReluGate would (a fused ReLU's gradient, never stored).
template <class T, class U = T>
struct ChannelPartials {
  const T* x;
  const U* y;     // null: no products
  const T* gate;  // null: none
  double* sums;
  double* products;
  std::size_t rows;
  std::size_t channels;
  std::size_t parts;
  CONFLUX_HD float at(std::size_t k) const {
    return gate != nullptr ? model::relu_gated(load(gate, k), load(x, k)) : load(x, k);
  }
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t c = i % channels;
    const std::size_t p = i / channels;
    const std::size_t begin = rows * p / parts;
    const std::size_t end = rows * (p + 1) / parts;
    double s = 0.0, q = 0.0;
    for (std::size_t r = begin; r < end; ++r) {
      const double v = at(r * channels + c);
      s += v;
      if (y != nullptr) q += v * static_cast<double>(load(y, r * channels + c));
    }
    sums[i] = s;
    if (y != nullptr) products[i] = q;
  }
};

/// out[c] = sum over p of partial[p * channels + c], in order.
struct SumPartials {
  const double* partial;
  double* out;
  std::size_t channels;
  std::size_t parts;
  CONFLUX_HD void operator()(std::size_t c) const {
    double s = 0.0;
    for (std::size_t p = 0; p < parts; ++p) s += partial[p * channels + c];
    out[c] = s;
  }
};

/// out[i] = float(in[i]).
struct ToFloat {
  const double* in;
  float* out;
  CONFLUX_HD void operator()(std::size_t i) const { out[i] = static_cast<float>(in[i]); }
};

/// dst[i] = src[i] converted (fp32 to bf16 rounds to nearest even).
template <class Src, class Dst>
struct Cast {
  const Src* src;
  Dst* dst;
  CONFLUX_HD void operator()(std::size_t i) const { store(dst, i, load(src, i)); }
};

/// How many chunks a per-channel sum over `rows` rows uses: enough threads to fill a GPU,
/// chunks of at least 32 rows; a function of the shape only, so every run sums alike.
inline std::size_t channel_parts(std::size_t rows, std::size_t channels) {
  const std::size_t by_rows = std::max<std::size_t>(1, rows / 32);
  const std::size_t by_threads =
      std::max<std::size_t>(1, 65536 / std::max<std::size_t>(1, channels));
  return std::min(by_rows, by_threads);
}

/// out[c] = sum over rows r of x[r, c] for a channels-last [rows, channels] x and, with y,
/// out[channels + c] = the same of x[r, c] * y[r, c], in one pass over x, in double and in a
/// fixed order; x gated by `gate` when set (ChannelPartials); `scratch` holds the partial sums.
template <class Ex, class T, class U = T>
void channel_sums(Ex& ex, const T* x, const U* y, std::size_t rows, std::size_t channels,
                  double* out, typename Ex::template Buffer<double>& scratch,
                  const T* gate = nullptr) {
  const std::size_t parts = channel_parts(rows, channels);
  const std::size_t n = parts * channels;
  ensure(scratch, y != nullptr ? 2 * n : n);
  double* products = y != nullptr ? scratch.data() + n : nullptr;
  ex.for_each(n,
              ChannelPartials<T, U>{x, y, gate, scratch.data(), products, rows, channels, parts});
  ex.for_each(channels, SumPartials{scratch.data(), out, channels, parts});
  if (y != nullptr) ex.for_each(channels, SumPartials{products, out + channels, channels, parts});
}

/// Where element i of an NHWC tensor of `c` channels and `hw` pixels per image stands in the
/// same tensor laid out NCHW.
CONFLUX_HD inline std::size_t channels_first_index(std::size_t i, std::size_t c, std::size_t hw) {
  const std::size_t pixel = i / c;  // n * hw + y * w + x
  return (pixel / hw * c + i % c) * hw + pixel % hw;
}

/// dst (NHWC) from 8-bit src (NCHW), normalised per channel by data::normalised_pixel (the
/// CPU's conversion, the same bits): a batch uploaded as pixels, a quarter of the floats' bytes.
template <class Dst>
struct PixelsToChannelsLast {
  const std::uint8_t* src;
  Dst* dst;
  const float* scale;  // per channel
  const float* shift;
  std::size_t c, h, w;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t ch = i % c;
    store(dst, i,
          data::normalised_pixel(src[channels_first_index(i, c, h * w)], scale[ch], shift[ch]));
  }
};

/// dst from 8-bit src in the same (flat, channels-first) order, normalised per channel: a
/// sample of `values` values holds `channels` planes of values / channels.
template <class Dst>
struct NormalisePixels {
  const std::uint8_t* src;
  Dst* dst;
  const float* scale;  // per channel
  const float* shift;
  std::size_t values, plane;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t ch = (i % values) / plane;
    store(dst, i, data::normalised_pixel(src[i], scale[ch], shift[ch]));
  }
};

/// dst (NHWC) from src (NCHW): one destination element per i.
template <class Src, class Dst>
struct ToChannelsLast {
  const Src* src;
  Dst* dst;
  std::size_t c, h, w;
  CONFLUX_HD void operator()(std::size_t i) const {
    store(dst, i, load(src, channels_first_index(i, c, h * w)));
  }
};

/// dst (NCHW) from src (NHWC): one destination element per i.
template <class T>
struct ToChannelsFirst {
  const T* src;
  T* dst;
  std::size_t c, h, w;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t yx = i % (h * w);
    const std::size_t nc = i / (h * w);
    const std::size_t ch = nc % c;
    const std::size_t n = nc / c;
    dst[i] = src[(n * h * w + yx) * c + ch];
  }
};

/// KRSC weights (element type T) from the KCRS float master ({out, C, k, k}, the CPU layout):
/// one destination element per i.
template <class T>
struct WeightsToChannelsLast {
  const float* src;
  T* dst;
  std::size_t c, kk;  // input channels, kernel * kernel
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t ch = i % c;
    const std::size_t rs = (i / c) % kk;
    const std::size_t k = i / (c * kk);
    store(dst, i, src[(k * c + ch) * kk + rs]);
  }
};

/// KCRS float gradients from KRSC ones of element type T: one destination element per i.
template <class T>
struct WeightsToChannelsFirst {
  const T* src;
  float* dst;
  std::size_t c, kk;
  CONFLUX_HD void operator()(std::size_t i) const {
    const std::size_t rs = i % kk;
    const std::size_t ch = (i / kk) % c;
    const std::size_t k = i / (c * kk);
    dst[i] = load(src, (k * kk + rs) * c + ch);
  }
};

/// The channels of a per-sample shape ({C, H, W} or {F}) and the pixels per sample (H * W, or
/// 1 for features): a tensor is [N * pixels, channels] channels-last.
struct ChannelsLast {
  std::size_t channels = 0;
  std::size_t pixels = 1;
};

inline ChannelsLast channels_last(const model::SampleShape& sample) {
  ChannelsLast l;
  l.channels = static_cast<std::size_t>(sample.at(0));
  for (std::size_t d = 1; d < sample.size(); ++d) l.pixels *= static_cast<std::size_t>(sample[d]);
  return l;
}

}  // namespace conflux::gpu::kernels
