// ImageNet-like test images (imagenet_like.hpp). Everything is integer arithmetic on the
// project's counter-keyed Rng and mix64: no std:: distributions and no libm, whose results
// differ between standard libraries, so a seed gives the same bytes everywhere.
//
// The constants below were tuned (docs/datasets.md, "ImageNet-like images") so that 2000
// images average about 400x350 pixels and 0.8 JPEG bytes per pixel at quality 90, the figures
// of ImageNet's training set.

#include "imagenet_like.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "conflux/core/rng.hpp"
#include "image_pixels.hpp"

namespace conflux::bench {

namespace {

constexpr std::int64_t kOne = 1 << 16;  // 1.0 in Q16

// 2^(x / 2^16) in Q16, |x| < 14 * 2^16: the whole part shifts, a cubic gives the fraction
// (within 1e-4 of the exact value).
std::int64_t pow2_q16(std::int64_t x) {
  const std::int64_t whole = x >> 16;  // floor
  const std::int64_t f = x & 0xFFFF;
  std::int64_t p = 5158;        // 0.0787
  p = 14824 + ((p * f) >> 16);  // 0.2262
  p = 45554 + ((p * f) >> 16);  // 0.6951
  p = kOne + ((p * f) >> 16);   // 1
  return whole >= 0 ? p << whole : p >> -whole;
}

// A standard normal draw in Q16, from the sum of four uniforms (range +-3.46).
std::int64_t normal_q16(Rng& rng) {
  std::int64_t sum = 0;
  for (int k = 0; k < 4; ++k) sum += static_cast<std::int64_t>(rng.next() >> 48);
  return ((sum - 2 * kOne) * 113512) >> 16;  // times sqrt(3): unit variance
}

// exp2 of a normal draw with `sigma_q16` standard deviation (in octaves), times `median`.
int log_normal(Rng& rng, int median, std::int64_t sigma_q16) {
  return static_cast<int>((median * pow2_q16((normal_q16(rng) * sigma_q16) >> 16)) >> 16);
}

// Long side / short side in 1/256: camera and crop formats, weighted as photographs are.
int draw_aspect(Rng& rng) {
  struct Format {
    int weight, aspect;
  };
  static constexpr std::array<Format, 5> kFormats{{
      {46, 341},  // 4:3
      {24, 384},  // 3:2
      {8, 256},   // 1:1
      {5, 455},   // 16:9
      {7, 320},   // 5:4
  }};
  int pick = static_cast<int>(rng.below(100));
  for (const Format& f : kFormats) {
    if (pick < f.weight) return f.aspect;
    pick -= f.weight;
  }
  return 256 + static_cast<int>(rng.below(300));  // the remaining 10%: any crop up to 2.2:1
}

// Smoothstep of a fraction in 1/256: value noise without visible lattice creases.
int smooth(int f) {
  return (f * f * (768 - 2 * f)) >> 16;
}

// A field of per-pixel values (pixel units), added to by the octaves of noise.
struct Field {
  int width, height;
  std::vector<int> v;
};

// Lattice value noise with cells of 2^shift pixels, amplitude `amp` pixels, keyed by `key`;
// with `sharp`, the sign of the noise (+-amp): edges as sharp as object boundaries.
void add_value_noise(Field& field, int shift, int amp, std::uint64_t key, bool sharp) {
  const int gw = (field.width >> shift) + 2, gh = (field.height >> shift) + 2;
  std::vector<int> lattice(static_cast<std::size_t>(gw) * gh);
  for (std::size_t i = 0; i < lattice.size(); ++i) {
    lattice[i] = static_cast<int>(mix64(key ^ mix64(i)) >> 56) - 128;
  }
  const int mask = (1 << shift) - 1;
  std::vector<int> wx(static_cast<std::size_t>(field.width));
  for (int x = 0; x < field.width; ++x) wx[x] = smooth(((x & mask) << 8) >> shift);
  for (int y = 0; y < field.height; ++y) {
    const int wy = smooth(((y & mask) << 8) >> shift);
    const int* top = &lattice[static_cast<std::size_t>(y >> shift) * gw];
    const int* bottom = top + gw;
    int* out = &field.v[static_cast<std::size_t>(y) * field.width];
    for (int x = 0; x < field.width; ++x) {
      const int g = x >> shift, w = wx[x];
      const int t = top[g] * (256 - w) + top[g + 1] * w;
      const int b = bottom[g] * (256 - w) + bottom[g + 1] * w;
      const std::int64_t value = static_cast<std::int64_t>(t) * (256 - wy) + std::int64_t{b} * wy;
      out[x] += sharp ? (value >= 0 ? amp : -amp) : static_cast<int>((value * amp) >> 23);
    }
  }
}

// Luma texture, coarse (cells of 128 px) to fine (2 px), in pixels at texture 256: most of
// it fine, as the detail of foliage, fur and fabric that makes photographs' JPEGs large.
constexpr std::array<int, 7> kOctaveAmp{12, 12, 12, 16, 32, 56, 80};
constexpr std::array<int, 3> kEdgeAmp{16, 24, 32};  // sharp edges, cells of 32, 16, 8 px
constexpr int kMaskAmp = 192;     // texture x (1 +- 0.75): smooth regions and detailed ones
constexpr int kGrainLuma = 90;    // per-pixel grain, +- pixels: with the fine octaves it sets
constexpr int kGrainChroma = 14;  // the bytes per pixel; and per channel
constexpr int kColourAmp = 8;     // slow colour variation per channel, cells of 64 px

std::uint8_t clamp_u8(int v) {
  return static_cast<std::uint8_t>(std::clamp(v, 0, 255));
}

}  // namespace

ImagenetLikeDraw draw_imagenet_like(std::uint64_t seed, std::uint64_t split, std::size_t index) {
  Rng rng{seed, split, index, 0x1A6E};
  const bool landscape = rng.below(10) >= 3;
  // About a third have ImageNet's most common long side, 500 (images resized by Flickr); the
  // rest spread log-normally, from thumbnails to camera-sized images.
  const int long_side =
      rng.below(100) < 33 ? 500 : std::clamp(log_normal(rng, 370, kOne / 2), 80, 2400);
  const int aspect = draw_aspect(rng);
  const int short_side = std::max(16, (long_side * 256 + aspect / 2) / aspect);
  ImagenetLikeDraw d;
  d.width = landscape ? long_side : short_side;
  d.height = landscape ? short_side : long_side;
  d.chroma = rng.below(10) == 0 ? Chroma::k444 : Chroma::k420;
  d.texture = log_normal(rng, 256, kOne / 2);
  return d;
}

RawImage imagenet_like_pixels(const RawImage& base, const ImagenetLikeDraw& draw,
                              std::uint64_t seed, std::uint64_t split, std::size_t index) {
  RawImage image = resize_bilinear(base, draw.width, draw.height);
  const auto n = static_cast<std::size_t>(draw.width) * draw.height;
  Field luma{draw.width, draw.height, std::vector<int>(n)};
  std::uint64_t key = mix64(Rng{seed, split, index, 0x7E47}.next());
  for (std::size_t o = 0; o < kOctaveAmp.size(); ++o) {
    add_value_noise(luma, 7 - static_cast<int>(o), kOctaveAmp[o] * draw.texture >> 8, ++key, false);
  }
  for (std::size_t e = 0; e < kEdgeAmp.size(); ++e) {
    add_value_noise(luma, 5 - static_cast<int>(e), kEdgeAmp[e] * draw.texture >> 8, ++key, true);
  }
  std::array<Field, 3> colour;
  for (Field& c : colour) {
    c = {draw.width, draw.height, std::vector<int>(n)};
    add_value_noise(c, 6, kColourAmp, ++key, false);
  }
  Field mask{draw.width, draw.height, std::vector<int>(n)};
  add_value_noise(mask, 6, kMaskAmp, ++key, false);
  const std::uint64_t grain_key = ++key;
  for (std::size_t p = 0; p < n; ++p) {
    const std::uint64_t h = mix64(grain_key + p);
    const int grain = (static_cast<int>(h & 0xFF) - 128) * kGrainLuma >> 7;
    const int texture = (luma.v[p] * (256 + mask.v[p])) >> 8;
    for (std::size_t c = 0; c < 3; ++c) {
      const int tint = (static_cast<int>((h >> (8 + 8 * c)) & 0xFF) - 128) * kGrainChroma >> 7;
      std::uint8_t& px = image.pixels[3 * p + c];
      px = clamp_u8(px + texture + grain + tint + colour[c].v[p]);
    }
  }
  return image;
}

std::string imagenet_like_class_name(std::size_t k) {
  return fmt::format("class{:04d}", k);
}

}  // namespace conflux::bench
