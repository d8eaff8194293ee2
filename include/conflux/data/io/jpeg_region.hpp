#pragma once
/// @file jpeg_region.hpp
/// Decoding of one window of a JPEG at a reduced DCT scale (k/8), through libjpeg-turbo's
/// libjpeg API (jpeg_crop_scanline, jpeg_skip_scanlines): what a random resized crop needs of
/// a large image, without the IDCT, upsampling and colour conversion of the rest. The pixels
/// of the window are exactly those of the whole image decoded at the same scale by
/// decode_image (same IDCT, upsampling and colour rules), and a damaged file fails exactly
/// when decode_image fails on it: the whole entropy-coded stream is still read.

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "conflux/data/io/image_codec.hpp"

namespace conflux::data {

/// A rectangle of an image in its full-size pixels.
struct PixelWindow {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  bool operator==(const PixelWindow&) const = default;
};

/// What to decode of a JPEG whose header was read.
struct RegionRequest {
  int channels = 3;    ///< 1 or 3, converted as decode_image converts
  PixelWindow window;  ///< inside the image, positive size
  /// The window's size at the chosen scale must stay >= these (the size it is resized to):
  /// the scale is region_scale()'s.
  int min_height = 0;
  int min_width = 0;
  int scale_eighths = 0;  ///< 1..8 forces the scale k/8 (tests, benchmarks); 0 = choose
};

/// Where decoded pixels lie in the image: pixel (0, 0) of the result is pixel (top, left) of
/// the whole image decoded at scale_eighths/8 (whose size is ceil(size * k / 8)).
struct RegionPlacement {
  int image_width = 0;  ///< the whole image's full size, from the header
  int image_height = 0;
  int scale_eighths = 8;
  int top = 0;
  int left = 0;
};

/// The smallest k of 1, 2, 4, 8 (libjpeg-turbo's SIMD IDCT sizes) with window_height * k / 8
/// >= min_height and window_width * k / 8 >= min_width (8 when none is). Depends only on
/// sizes, so every rank picks the same scale.
int region_scale(int window_height, int window_width, int min_height, int min_width) noexcept;

/// Decodes windows of JPEGs. Holds libjpeg's decoder state, reused across images: one per
/// thread, never shared. Move-only.
class JpegRegionDecoder {
 public:
  JpegRegionDecoder();
  ~JpegRegionDecoder();
  JpegRegionDecoder(JpegRegionDecoder&&) noexcept;
  JpegRegionDecoder& operator=(JpegRegionDecoder&&) noexcept;

  /// Reads the header of `bytes` (a JPEG: sniff_format says so) and returns the full size as
  /// {0, 0, height, width}. The bytes must stay alive until decode(). CorruptSampleError
  /// "<where>: ..." as decode_image gives for the same header.
  PixelWindow read_header(std::span<const std::uint8_t> bytes, const std::string& where);
  /// Decodes `request.window` of the image read_header() read into `out` (CHW): the whole
  /// pixels at the chosen scale that the window touches, and says where they lie.
  /// CorruptSampleError naming the sample for damaged data.
  RegionPlacement decode(const RegionRequest& request, DecodedImage& out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace conflux::data
