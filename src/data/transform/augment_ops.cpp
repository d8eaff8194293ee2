#include "conflux/data/transform/augment_ops.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace conflux::data::augment {

namespace {

// Input taps of a 1-D linear resize: PyTorch's align_corners = false source index, clamped at
// 0 on the left; on the right both taps collapse onto the last pixel. Each output is
// near[o] * in[first[o]] + far[o] * in[second[o]].
struct Taps {
  std::vector<int> first;
  std::vector<int> second;
  std::vector<float> near;  // 1 - far: stored, so the inner loops only multiply and add
  std::vector<float> far;   // weight of `second`
};

// One axis of a resize's source: `pixels` whole pixels from index `offset`, of which the
// resized area starts `start` pixels in and spans `length` (start 0 and length = pixels for a
// whole-pixel box).
struct Axis {
  int offset;
  int pixels;
  float start;
  float length;
};

Axis axis(int offset, int pixels, float start, float length) {
  return length > 0 ? Axis{offset, pixels, start, length}
                    : Axis{offset, pixels, 0.0f, static_cast<float>(pixels)};
}

// Taps of outputs [begin, begin + count) of a resize of `in` to out_size pixels, as indices
// into the source. For a whole-pixel box the arithmetic is the plain resize's, bit for bit.
void linear_taps(const Axis& in, int out_size, int begin, int count, Taps& taps) {
  const auto n = static_cast<std::size_t>(count);
  taps.first.resize(n);
  taps.second.resize(n);
  taps.near.resize(n);
  taps.far.resize(n);
  const int in_size = in.pixels, offset = in.offset;
  const float scale = in.length / static_cast<float>(out_size);
  for (int i = 0; i < count; ++i) {
    const int o = begin + i;
    const float source = std::max((static_cast<float>(o) + 0.5f) * scale - 0.5f + in.start, 0.0f);
    const int i0 = std::min(static_cast<int>(source), in_size - 1);
    const int i1 = i0 + (i0 < in_size - 1 ? 1 : 0);
    const float far = std::clamp(source - static_cast<float>(i0), 0.0f, 1.0f);
    taps.first[i] = offset + i0;
    taps.second[i] = offset + i1;
    taps.near[i] = 1.0f - far;
    taps.far[i] = far;
  }
}

// One source row resampled horizontally: the first pass of the separable resize.
void resample_row(const std::uint8_t* row, const Taps& xs, float* out) {
  const int* first = xs.first.data();
  const int* second = xs.second.data();
  const float* near = xs.near.data();
  const float* far = xs.far.data();
  const auto n = xs.first.size();
  for (std::size_t x = 0; x < n; ++x) {
    out[x] =
        near[x] * static_cast<float>(row[first[x]]) + far[x] * static_cast<float>(row[second[x]]);
  }
}

// The two most recent horizontally resampled source rows of a plane. Output rows read
// non-decreasing source rows, so each source row is resampled at most once per plane.
class RowCache {
 public:
  void reset(const std::uint8_t* plane, int stride, std::size_t width) {
    plane_ = plane;
    stride_ = stride;
    for (auto& b : rows_) b.resize(width);
    tag_[0] = tag_[1] = -1;
  }
  // Resampled source row `r`, keeping row `keep` if cached.
  const float* get(int r, int keep, const Taps& xs) {
    for (int s = 0; s < 2; ++s)
      if (tag_[s] == r) return rows_[s].data();
    const int s = tag_[0] == keep ? 1 : 0;
    resample_row(plane_ + static_cast<std::size_t>(r) * stride_, xs, rows_[s].data());
    tag_[s] = r;
    return rows_[s].data();
  }

 private:
  const std::uint8_t* plane_ = nullptr;
  int stride_ = 0;
  std::vector<float> rows_[2];
  int tag_[2] = {-1, -1};
};

// torchvision "reflect" padding: mirror about the edge pixel without repeating it. The period
// form also covers kernels wider than the image.
int reflect(int i, int n) {
  if (n == 1) return 0;
  const int period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

float clamp_pixel(float v) {
  return std::clamp(v, 0.0f, kPixelMax);
}

// ITU-R 601 luma, the weights torchvision's rgb_to_grayscale uses (rounded to 3 digits).
constexpr float kRed = 0.299f, kGreen = 0.587f, kBlue = 0.114f;

// The nearest pixel value, halves up, as PIL's and torchvision's uint8 resizes round. A convex
// combination of uint8 values stays in [0, 255], so truncation is the floor, and it
// vectorises where std::floor becomes a library call per value.
inline int round_pixel(float v) {
  return static_cast<int>(v + 0.5f);
}

// The separable resize of `window` into `dst` (uint8 or float), rounded to pixel values.
template <typename Out>
void resize_window(ImageView src, const ResizeWindow& window, bool flip, Out* dst) {
  thread_local Taps xs, ys;
  thread_local RowCache cache;
  const Box& box = window.box;
  const SubPixelSpan& span = window.span;
  linear_taps(axis(box.left, box.width, span.left, span.width), window.full_width, window.left,
              window.width, xs);
  linear_taps(axis(box.top, box.height, span.top, span.height), window.full_height, window.top,
              window.height, ys);
  if (flip) {
    // Mirroring the taps mirrors the output exactly, with no second pass over the pixels.
    std::reverse(xs.first.begin(), xs.first.end());
    std::reverse(xs.second.begin(), xs.second.end());
    std::reverse(xs.near.begin(), xs.near.end());
    std::reverse(xs.far.begin(), xs.far.end());
  }
  const ImageShape in = src.shape;
  const auto w = static_cast<std::size_t>(window.width);
  for (int c = 0; c < in.channels; ++c) {
    cache.reset(src.pixels.data() + static_cast<std::size_t>(c) * in.height * in.width, in.width,
                w);
    for (int y = 0; y < window.height; ++y) {
      const int r0 = ys.first[y], r1 = ys.second[y];
      const float* top = cache.get(r0, r1, xs);
      const float* bottom = cache.get(r1, r0, xs);
      const float near = ys.near[y], far = ys.far[y];
      Out* row = dst + (static_cast<std::size_t>(c) * window.height + y) * w;
      for (std::size_t x = 0; x < w; ++x)
        row[x] = static_cast<Out>(round_pixel(near * top[x] + far * bottom[x]));
    }
  }
}

}  // namespace

Box random_resized_crop_box(int height, int width, float scale_min, float scale_max,
                            float ratio_min, float ratio_max, Rng& rng) {
  const double area = static_cast<double>(height) * width;
  const auto log_min = static_cast<float>(std::log(static_cast<double>(ratio_min)));
  const auto log_max = static_cast<float>(std::log(static_cast<double>(ratio_max)));
  // std::nearbyint rounds half to even, as Python's round() in torchvision does.
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(scale_min, scale_max);
    const double aspect = std::exp(static_cast<double>(rng.uniform(log_min, log_max)));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int top = static_cast<int>(rng.below(static_cast<std::uint64_t>(height - h + 1)));
      const int left = static_cast<int>(rng.below(static_cast<std::uint64_t>(width - w + 1)));
      return {top, left, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = std::max(1, static_cast<int>(std::nearbyint(w / static_cast<double>(ratio_min))));
  } else if (in_ratio > ratio_max) {
    w = std::max(1, static_cast<int>(std::nearbyint(h * static_cast<double>(ratio_max))));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

void crop_to_float(std::span<const std::uint8_t> src, ImageShape in, int top, int left, int out_h,
                   int out_w, bool flip, float* dst) {
  for (int c = 0; c < in.channels; ++c) {
    const std::uint8_t* plane = src.data() + static_cast<std::size_t>(c) * in.height * in.width;
    for (int y = 0; y < out_h; ++y) {
      const int sy = y + top;
      float* row = dst + (static_cast<std::size_t>(c) * out_h + y) * out_w;
      if (sy < 0 || sy >= in.height) {
        std::fill(row, row + out_w, 0.0f);
        continue;
      }
      const std::uint8_t* line = plane + static_cast<std::size_t>(sy) * in.width;
      for (int x = 0; x < out_w; ++x) {
        const int sx = (flip ? out_w - 1 - x : x) + left;
        row[x] = (sx < 0 || sx >= in.width) ? 0.0f : static_cast<float>(line[sx]);
      }
    }
  }
}

void resize_bilinear(ImageView src, const ResizeWindow& window, bool flip, std::uint8_t* dst) {
  resize_window(src, window, flip, dst);
}

void resize_bilinear(ImageView src, const ResizeWindow& window, bool flip, float* dst) {
  resize_window(src, window, flip, dst);
}

ResizeWindow scaled_window(Box box, int scale_eighths, int part_top, int part_left,
                           ImageShape part) {
  const double k = scale_eighths / 8.0;
  // The box's edges in the part, in scaled pixels; whole pixels [first, end) cover them.
  const double top = box.top * k - part_top, left = box.left * k - part_left;
  const double height = box.height * k, width = box.width * k;
  const int y0 = std::clamp(static_cast<int>(std::floor(top)), 0, part.height - 1);
  const int x0 = std::clamp(static_cast<int>(std::floor(left)), 0, part.width - 1);
  const int y1 = std::clamp(static_cast<int>(std::ceil(top + height)), y0 + 1, part.height);
  const int x1 = std::clamp(static_cast<int>(std::ceil(left + width)), x0 + 1, part.width);
  ResizeWindow w;
  w.box = {y0, x0, y1 - y0, x1 - x0};
  w.span = {static_cast<float>(top - y0), static_cast<float>(left - x0), static_cast<float>(height),
            static_cast<float>(width)};
  return w;
}

void resize_bilinear(std::span<const std::uint8_t> src, ImageShape in, Box box, int out_h,
                     int out_w, bool flip, float* dst) {
  resize_window({in, src}, {box, out_h, out_w, 0, 0, out_h, out_w}, flip, dst);
}

void rotate(const float* src, ImageShape shape, float degrees, float* dst) {
  const int h = shape.height, w = shape.width;
  const std::size_t plane = static_cast<std::size_t>(h) * w;
  const double radians = static_cast<double>(degrees) * std::numbers::pi / 180.0;
  const auto cos_a = static_cast<float>(std::cos(radians));
  const auto sin_a = static_cast<float>(std::sin(radians));
  const float cx = static_cast<float>(w - 1) * 0.5f, cy = static_cast<float>(h - 1) * 0.5f;
  for (int y = 0; y < h; ++y) {
    const float dy = static_cast<float>(y) - cy;
    // Inverse map: the output pixel reads the source point rotated clockwise (image y points
    // down, so this turns the picture counter-clockwise, torchvision's sign).
    const float base_x = cx - sin_a * dy, base_y = cy + cos_a * dy;
    for (int x = 0; x < w; ++x) {
      const float dx = static_cast<float>(x) - cx;
      const float sx = base_x + cos_a * dx, sy = base_y + sin_a * dx;
      const float fx0 = std::floor(sx), fy0 = std::floor(sy);
      const std::size_t at = static_cast<std::size_t>(y) * w + x;
      if (!(fx0 >= -1.0f && fx0 < static_cast<float>(w) && fy0 >= -1.0f &&
            fy0 < static_cast<float>(h))) {
        for (int c = 0; c < shape.channels; ++c) dst[c * plane + at] = 0.0f;
        continue;
      }
      const int x0 = static_cast<int>(fx0), y0 = static_cast<int>(fy0);
      const float fx = sx - fx0, fy = sy - fy0;
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < w && y0 + 1 < h) {
        // Interior fast path: the same weights and sum order as below, without the clamps.
        const float w00 = (1.0f - fx) * (1.0f - fy), w01 = fx * (1.0f - fy);
        const float w10 = (1.0f - fx) * fy, w11 = fx * fy;
        const std::size_t i00 = static_cast<std::size_t>(y0) * w + x0;
        for (int c = 0; c < shape.channels; ++c) {
          const float* p = src + c * plane + i00;
          dst[c * plane + at] = w00 * p[0] + w01 * p[1] + w10 * p[w] + w11 * p[w + 1];
        }
        continue;
      }
      const bool left = x0 >= 0, right = x0 + 1 < w, up = y0 >= 0, down = y0 + 1 < h;
      // Corners outside the image keep weight 0 (zero fill) and read a clamped, valid pixel.
      const float w00 = up && left ? (1.0f - fx) * (1.0f - fy) : 0.0f;
      const float w01 = up && right ? fx * (1.0f - fy) : 0.0f;
      const float w10 = down && left ? (1.0f - fx) * fy : 0.0f;
      const float w11 = down && right ? fx * fy : 0.0f;
      const int xa = std::max(x0, 0), xb = std::min(x0 + 1, w - 1);
      const int ya = std::max(y0, 0), yb = std::min(y0 + 1, h - 1);
      const std::size_t i00 = static_cast<std::size_t>(ya) * w + xa;
      const std::size_t i01 = static_cast<std::size_t>(ya) * w + xb;
      const std::size_t i10 = static_cast<std::size_t>(yb) * w + xa;
      const std::size_t i11 = static_cast<std::size_t>(yb) * w + xb;
      for (int c = 0; c < shape.channels; ++c) {
        const float* p = src + c * plane;
        dst[c * plane + at] = w00 * p[i00] + w01 * p[i01] + w10 * p[i10] + w11 * p[i11];
      }
    }
  }
}

void adjust_brightness(float* chw, ImageShape shape, float factor) {
  const std::size_t n = shape.size();
  for (std::size_t i = 0; i < n; ++i) chw[i] = clamp_pixel(chw[i] * factor);
}

void adjust_contrast(float* chw, ImageShape shape, float factor) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  // A double sum in a fixed order: the mean is the same on every thread and rank.
  double sum = 0.0;
  if (shape.channels == 3) {
    for (std::size_t i = 0; i < plane; ++i)
      sum += kRed * chw[i] + kGreen * chw[plane + i] + kBlue * chw[2 * plane + i];
    sum /= static_cast<double>(plane);
  } else {
    for (std::size_t i = 0; i < shape.size(); ++i) sum += chw[i];
    sum /= static_cast<double>(shape.size());
  }
  const float offset = (1.0f - factor) * static_cast<float>(sum);
  for (std::size_t i = 0; i < shape.size(); ++i) chw[i] = clamp_pixel(factor * chw[i] + offset);
}

void adjust_saturation(float* chw, ImageShape shape, float factor) {
  if (shape.channels != 3) return;
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  float* r = chw;
  float* g = chw + plane;
  float* b = chw + 2 * plane;
  const float keep = 1.0f - factor;
  for (std::size_t i = 0; i < plane; ++i) {
    const float grey = kRed * r[i] + kGreen * g[i] + kBlue * b[i];
    r[i] = clamp_pixel(factor * r[i] + keep * grey);
    g[i] = clamp_pixel(factor * g[i] + keep * grey);
    b[i] = clamp_pixel(factor * b[i] + keep * grey);
  }
}

void gaussian_kernel(int kernel, float sigma, float* weights) {
  const double half = (kernel - 1) * 0.5;
  const auto pdf = [&](int i) {
    const double x = (static_cast<double>(i) - half) / sigma;
    return std::exp(-0.5 * x * x);
  };
  // Two passes instead of a temporary keeps the per-sample path free of allocations.
  double sum = 0.0;
  for (int i = 0; i < kernel; ++i) sum += pdf(i);
  for (int i = 0; i < kernel; ++i) weights[i] = static_cast<float>(pdf(i) / sum);
}

void gaussian_blur(float* chw, ImageShape shape, int kernel, float sigma) {
  const int h = shape.height, w = shape.width, half = kernel / 2;
  thread_local std::vector<float> weights, padded;
  weights.resize(static_cast<std::size_t>(kernel));
  gaussian_kernel(kernel, sigma, weights.data());
  const float* k = weights.data();
  const std::size_t plane = static_cast<std::size_t>(h) * w;
  // Each pass reads a border-padded copy, so it can write its result in place.
  padded.resize(
      std::max(static_cast<std::size_t>(w + 2 * half), static_cast<std::size_t>(h + 2 * half) * w));
  for (int c = 0; c < shape.channels; ++c) {
    float* img = chw + c * plane;
    for (int y = 0; y < h; ++y) {
      float* row = img + static_cast<std::size_t>(y) * w;
      // reflect() divides, so keep it to the border columns.
      for (int i = 0; i < half; ++i) {
        padded[i] = row[reflect(i - half, w)];
        padded[w + half + i] = row[reflect(w + i, w)];
      }
      std::copy(row, row + w, padded.data() + half);
      // Taps outside, pixels inside: the inner loop vectorises (same sum order as per pixel).
      std::fill(row, row + w, 0.0f);
      for (int j = 0; j < kernel; ++j) {
        const float* from = padded.data() + j;
        for (int x = 0; x < w; ++x) row[x] += k[j] * from[x];
      }
    }
    for (int i = 0; i < h + 2 * half; ++i) {
      const float* from = img + static_cast<std::size_t>(reflect(i - half, h)) * w;
      std::copy(from, from + w, padded.data() + static_cast<std::size_t>(i) * w);
    }
    for (int y = 0; y < h; ++y) {
      float* row = img + static_cast<std::size_t>(y) * w;
      std::fill(row, row + w, 0.0f);
      for (int j = 0; j < kernel; ++j) {
        const float* from = padded.data() + static_cast<std::size_t>(y + j) * w;
        for (int x = 0; x < w; ++x) row[x] += k[j] * from[x];
      }
    }
  }
}

void cutout(float* chw, ImageShape shape, int centre_y, int centre_x, int size) {
  const int y0 = std::max(centre_y - size / 2, 0);
  const int y1 = std::min(centre_y - size / 2 + size, shape.height);
  const int x0 = std::max(centre_x - size / 2, 0);
  const int x1 = std::min(centre_x - size / 2 + size, shape.width);
  if (y0 >= y1 || x0 >= x1) return;
  for (int c = 0; c < shape.channels; ++c) {
    for (int y = y0; y < y1; ++y) {
      float* row = chw + (static_cast<std::size_t>(c) * shape.height + y) * shape.width;
      std::fill(row + x0, row + x1, 0.0f);
    }
  }
}

}  // namespace conflux::data::augment
