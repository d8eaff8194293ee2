#include "conflux/model/im2col.hpp"

#include <algorithm>
#include <cstddef>

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

// Stride 1 with "same" output width (2p = k - 1: the 3x3 pad 1 and 1x1 pad 0 convolutions
// of CNNs and ResNets): a patch row (c, ki, kj) is the channel plane shifted by
// (ki - p) * W + (kj - p), so each row is one long copy of the plane instead of H' copies of
// W floats; the columns that wrapped around from the neighbouring image row, and the rows
// above or below the image, are then zeroed. Writes exactly what the general loop writes.
bool is_same_stride1(const ConvGeometry& g) noexcept {
  return g.stride == 1 && g.out_width == g.width && g.out_height == g.height;
}

// Where patch row (ki, kj) of a stride-1 "same" geometry meets its channel plane: the patch
// entries [first, last) (from output (oh_lo, lo) to (oh_hi - 1, hi - 1)) read or write plane
// entries [first + shift, last + shift), all inside the plane; the columns outside [lo, hi)
// of each row in between wrap around to the neighbouring image row. Empty when the patch row
// reads only padding.
struct PatchSpan {
  bool empty = true;
  std::size_t first = 0, last = 0;
  std::ptrdiff_t shift = 0;
  int oh_lo = 0, oh_hi = 0, lo = 0, hi = 0;
};

PatchSpan patch_span(const ConvGeometry& g, int ki, int kj) noexcept {
  const int p = g.padding;
  const int w = g.width;
  PatchSpan s;
  // Output rows whose input row oh - p + ki lies inside the image.
  s.oh_lo = std::max(0, p - ki);
  s.oh_hi = std::min(g.height, g.height + p - ki);
  const auto [lo, hi] = valid_columns(g, kj);
  s.lo = lo;
  s.hi = hi;
  s.empty = s.oh_lo >= s.oh_hi || lo >= hi;
  if (s.empty) return s;
  s.first = static_cast<std::size_t>(s.oh_lo) * w + lo;
  s.last = static_cast<std::size_t>(s.oh_hi - 1) * w + hi;
  s.shift = static_cast<std::ptrdiff_t>(ki - p) * w + (kj - p);
  return s;
}

void im2col_same_stride1(const float* image, const ConvGeometry& g, float* dst) {
  const int w = g.width;
  const std::size_t plane_size = static_cast<std::size_t>(g.height) * w;
  for (int c = 0; c < g.channels; ++c) {
    const float* plane = image + c * plane_size;
    for (int ki = 0; ki < g.kernel; ++ki) {
      for (int kj = 0; kj < g.kernel; ++kj, dst += plane_size) {
        const PatchSpan s = patch_span(g, ki, kj);
        if (s.empty) {
          std::fill(dst, dst + plane_size, 0.0f);
          continue;
        }
        // Written front to back (the destination may be too large for the caches).
        const float* src = plane + (static_cast<std::ptrdiff_t>(s.first) + s.shift);
        std::fill(dst, dst + s.first, 0.0f);
        std::copy(src, src + (s.last - s.first), dst + s.first);
        std::fill(dst + s.last, dst + plane_size, 0.0f);
        for (int oh = s.oh_lo; oh < s.oh_hi; ++oh) {
          float* row = dst + static_cast<std::size_t>(oh) * w;
          std::fill(row, row + s.lo, 0.0f);
          std::fill(row + s.hi, row + w, 0.0f);
        }
      }
    }
  }
}

}  // namespace

void im2col(std::span<const float> image, const ConvGeometry& g, std::span<float> col) {
  if (is_same_stride1(g)) {
    im2col_same_stride1(image.data(), g, col.data());
    return;
  }
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

namespace {

void build_masks(const ConvGeometry& g, Col2imMasks& masks) {
  if (masks.height == g.height && masks.width == g.width && masks.kernel == g.kernel &&
      masks.padding == g.padding)
    return;
  const std::size_t plane_size = static_cast<std::size_t>(g.height) * g.width;
  masks.values.assign(static_cast<std::size_t>(g.kernel) * plane_size, 0.0f);
  for (int kj = 0; kj < g.kernel; ++kj) {
    const auto [lo, hi] = valid_columns(g, kj);
    float* m = masks.values.data() + kj * plane_size;
    for (int row = 0; row < g.height; ++row)
      std::fill(m + row * g.width + lo, m + row * g.width + hi, 1.0f);
  }
  masks.height = g.height;
  masks.width = g.width;
  masks.kernel = g.kernel;
  masks.padding = g.padding;
}

}  // namespace

// Each patch row (c, ki, kj) adds to the channel plane shifted by (ki - p) W + (kj - p), in
// one pass over the valid rows. The entries of the columns that wrap around to the
// neighbouring image row are multiplied by a 0 mask: they add +-0, which leaves every sum's
// bits as the row-by-row loop leaves them (a sum that starts at +0 can never become -0, and
// x + -0 = x + +0 = x for any other x). The per-pixel order of the additions, (ki, kj), is
// the same, so the result is bit-identical.
void col2im(std::span<const float> col, const ConvGeometry& g, std::span<float> image,
            Col2imMasks& masks) {
  if (!is_same_stride1(g)) {
    col2im(col, g, image);
    return;
  }
  build_masks(g, masks);
  std::fill(image.begin(), image.end(), 0.0f);
  const std::size_t plane_size = static_cast<std::size_t>(g.height) * g.width;
  const float* src = col.data();
  for (int c = 0; c < g.channels; ++c) {
    float* plane = image.data() + c * plane_size;
    for (int ki = 0; ki < g.kernel; ++ki) {
      for (int kj = 0; kj < g.kernel; ++kj, src += plane_size) {
        const PatchSpan s = patch_span(g, ki, kj);
        if (s.empty) continue;
        float* dst = plane + (static_cast<std::ptrdiff_t>(s.first) + s.shift);
        const float* from = src + s.first;
        const float* mask = masks.values.data() + kj * plane_size + s.first;
        const std::size_t count = s.last - s.first;
        for (std::size_t i = 0; i < count; ++i) dst[i] += from[i] * mask[i];
      }
    }
  }
}

}  // namespace conflux::model
