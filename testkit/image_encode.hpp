#pragma once
/// @file image_encode.hpp
/// Encoding of 8-bit images to JPEG (TurboJPEG) and PNG (libpng), for the test images of
/// `conflux-bench make-images` and for the unit tests of the decoder. conflux itself only
/// decodes, so this lives in testkit/ (compiled into conflux-bench and the unit tests, never
/// into libconflux.a; docs/design.md, "Areas and their order").
/// Every encoder is deterministic: the same pixels give the same bytes.

#include <array>
#include <cstdint>
#include <vector>

namespace conflux::testkit {

/// The channels of a RawImage, interleaved in this order.
enum class PixelKind { kGray, kGrayAlpha, kRgb, kRgba, kCmyk };

/// Channels per pixel of `kind`.
int channels_of(PixelKind kind) noexcept;

/// An interleaved (HWC) 8-bit image: width * height * channels_of(kind) bytes.
struct RawImage {
  int width = 0;
  int height = 0;
  PixelKind kind = PixelKind::kRgb;
  std::vector<std::uint8_t> pixels;
};

/// A width x height image of `kind` whose value at (x, y, channel c) is value(x, y, c),
/// clamped to [0, 255]: the tests' generated pictures, each its own pattern.
template <class Value>
RawImage make_image(int width, int height, PixelKind kind, Value value) {
  RawImage image{width, height, kind, {}};
  const int channels = channels_of(kind);
  image.pixels.reserve(static_cast<std::size_t>(width) * height * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double v = value(x, y, c);
        image.pixels.push_back(static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v));
      }
    }
  }
  return image;
}

/// Chroma subsampling of a colour JPEG (gray JPEGs have none).
enum class Chroma { k444, k420 };

/// A baseline JPEG of a kGray, kRgb or kCmyk image (CMYK is written as Adobe YCCK, with the
/// values as given, i.e. inverted CMYK). RuntimeError for another kind or a TurboJPEG error.
std::vector<std::uint8_t> encode_jpeg(const RawImage& image, int quality,
                                      Chroma chroma = Chroma::k420);

/// An 8-bit PNG of any kind but kCmyk (kGray, kGrayAlpha, kRgb, kRgba); Adam7-interlaced
/// when `interlaced`.
std::vector<std::uint8_t> encode_png(const RawImage& image, bool interlaced = false);

/// A 16-bit PNG: `samples` holds width * height * channels_of(kind) values, HWC.
std::vector<std::uint8_t> encode_png16(int width, int height, PixelKind kind,
                                       const std::vector<std::uint16_t>& samples);

/// An 8-bit palette PNG: one index per pixel into `palette` (RGB entries), and when `alpha` is
/// not empty a tRNS chunk giving the first alpha.size() entries that alpha.
std::vector<std::uint8_t> encode_png_palette(
    int width, int height, const std::vector<std::array<std::uint8_t, 3>>& palette,
    const std::vector<std::uint8_t>& indices, const std::vector<std::uint8_t>& alpha = {});

}  // namespace conflux::testkit
