// Pixel operations of the test-image writers (image_pixels.hpp).

#include "image_pixels.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace conflux::bench {

namespace {

// Source positions of one axis for bilinear resizing, in 1/256 pixel: integer arithmetic, so
// the bytes written do not depend on the machine.
struct Tap {
  int i0, i1, w1;
};

std::vector<Tap> taps(int src, int dst) {
  std::vector<Tap> out(static_cast<std::size_t>(dst));
  for (int d = 0; d < dst; ++d) {
    // Pixel centres: source position (d + 0.5) * src / dst - 0.5, clamped at the edges.
    const long long twice = std::max(0LL, (2LL * d + 1) * src - dst);
    const long long pos = twice * 256 / (2LL * dst);
    const int i0 = std::min(static_cast<int>(pos >> 8), src - 1);
    out[static_cast<std::size_t>(d)] = {i0, std::min(i0 + 1, src - 1), static_cast<int>(pos & 255)};
  }
  return out;
}

}  // namespace

RawImage resize_bilinear(const RawImage& src, int width, int height) {
  const int ch = channels_of(src.kind);
  RawImage out{width, height, src.kind,
               std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * ch)};
  const auto xs = taps(src.width, width);
  const auto ys = taps(src.height, height);
  auto at = [&](int y, int x, int c) -> int {
    return src.pixels[(static_cast<std::size_t>(y) * src.width + x) * ch + c];
  };
  std::size_t o = 0;
  for (const Tap& ty : ys) {
    for (const Tap& tx : xs) {
      for (int c = 0; c < ch; ++c) {
        const int top = at(ty.i0, tx.i0, c) * (256 - tx.w1) + at(ty.i0, tx.i1, c) * tx.w1;
        const int bottom = at(ty.i1, tx.i0, c) * (256 - tx.w1) + at(ty.i1, tx.i1, c) * tx.w1;
        out.pixels[o++] =
            static_cast<std::uint8_t>((top * (256 - ty.w1) + bottom * ty.w1 + 32768) >> 16);
      }
    }
  }
  return out;
}

RawImage with_alpha(const RawImage& rgb) {
  RawImage out{rgb.width, rgb.height, PixelKind::kRgba, {}};
  out.pixels.reserve(rgb.pixels.size() / 3 * 4);
  for (int y = 0; y < rgb.height; ++y) {
    for (int x = 0; x < rgb.width; ++x) {
      const std::size_t p = (static_cast<std::size_t>(y) * rgb.width + x) * 3;
      out.pixels.insert(out.pixels.end(), rgb.pixels.begin() + p, rgb.pixels.begin() + p + 3);
      // A diagonal ramp from opaque to half transparent: real alpha, never all 255.
      out.pixels.push_back(
          static_cast<std::uint8_t>(255 - (x + y) * 128 / (rgb.width + rgb.height)));
    }
  }
  return out;
}

RawImage to_gray(const RawImage& rgb) {
  RawImage out{rgb.width, rgb.height, PixelKind::kGray, {}};
  for (std::size_t p = 0; p < rgb.pixels.size(); p += 3) {
    const unsigned r = rgb.pixels[p], g = rgb.pixels[p + 1], b = rgb.pixels[p + 2];
    out.pixels.push_back(
        static_cast<std::uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16));
  }
  return out;
}

RawImage to_inverted_cmyk(const RawImage& rgb) {
  RawImage out{rgb.width, rgb.height, PixelKind::kCmyk, {}};
  out.pixels.reserve(rgb.pixels.size() / 3 * 4);
  for (std::size_t p = 0; p < rgb.pixels.size(); p += 3) {
    const unsigned k = std::max({rgb.pixels[p], rgb.pixels[p + 1], rgb.pixels[p + 2]});
    for (std::size_t c = 0; c < 3; ++c) {
      // Black pixels (k = 0) decode to 0 whatever the colour channels hold; 255 = no ink.
      out.pixels.push_back(
          static_cast<std::uint8_t>(k == 0 ? 255 : (rgb.pixels[p + c] * 255 + k / 2) / k));
    }
    out.pixels.push_back(static_cast<std::uint8_t>(k));
  }
  return out;
}

}  // namespace conflux::bench
