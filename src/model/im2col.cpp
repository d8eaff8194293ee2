#include "conflux/model/im2col.hpp"

#include <algorithm>

namespace conflux::model {
namespace {

// Output columns [lo, hi) whose input column ow*s - p + kj lies inside [0, width); outside it
// the patch reads zero padding. Computing the range once per kernel column keeps the inner
// loops free of bounds checks.
struct ColumnRange {
  int lo;
  int hi;
};

ColumnRange valid_columns(const ConvGeometry& g, int kj) noexcept {
  const int s = g.stride;
  const int first = g.padding - kj;               // ow*s >= first
  const int last = g.width - 1 + g.padding - kj;  // ow*s <= last
  int lo = first > 0 ? (first + s - 1) / s : 0;
  int hi = last >= 0 ? last / s + 1 : 0;
  hi = std::min(hi, g.out_width);
  lo = std::min(lo, hi);
  return {lo, hi};
}

}  // namespace

void im2col(std::span<const float> image, const ConvGeometry& g, std::span<float> col) {
  const int k = g.kernel;
  const int s = g.stride;
  const int p = g.padding;
  const int ow_count = g.out_width;
  float* dst = col.data();
  for (int c = 0; c < g.channels; ++c) {
    const float* plane = image.data() + static_cast<std::size_t>(c) * g.height * g.width;
    for (int ki = 0; ki < k; ++ki) {
      for (int kj = 0; kj < k; ++kj) {
        const auto [lo, hi] = valid_columns(g, kj);
        const int shift = kj - p;
        for (int oh = 0; oh < g.out_height; ++oh, dst += ow_count) {
          const int ih = oh * s - p + ki;
          if (ih < 0 || ih >= g.height) {
            std::fill(dst, dst + ow_count, 0.0f);
            continue;
          }
          const float* row = plane + static_cast<std::size_t>(ih) * g.width;
          std::fill(dst, dst + lo, 0.0f);
          if (s == 1) {
            std::copy(row + lo + shift, row + hi + shift, dst + lo);
          } else {
            for (int ow = lo; ow < hi; ++ow) dst[ow] = row[ow * s + shift];
          }
          std::fill(dst + hi, dst + ow_count, 0.0f);
        }
      }
    }
  }
}

void col2im(std::span<const float> col, const ConvGeometry& g, std::span<float> image) {
  std::fill(image.begin(), image.end(), 0.0f);
  const int k = g.kernel;
  const int s = g.stride;
  const int p = g.padding;
  const int ow_count = g.out_width;
  const float* src = col.data();
  for (int c = 0; c < g.channels; ++c) {
    float* plane = image.data() + static_cast<std::size_t>(c) * g.height * g.width;
    for (int ki = 0; ki < k; ++ki) {
      for (int kj = 0; kj < k; ++kj) {
        const auto [lo, hi] = valid_columns(g, kj);
        const int shift = kj - p;
        for (int oh = 0; oh < g.out_height; ++oh, src += ow_count) {
          const int ih = oh * s - p + ki;
          if (ih < 0 || ih >= g.height) continue;
          float* row = plane + static_cast<std::size_t>(ih) * g.width;
          if (s == 1) {
            for (int ow = lo; ow < hi; ++ow) row[ow + shift] += src[ow];
          } else {
            for (int ow = lo; ow < hi; ++ow) row[ow * s + shift] += src[ow];
          }
        }
      }
    }
  }
}

}  // namespace conflux::model
