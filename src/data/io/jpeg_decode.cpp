// JPEG decoding through libjpeg-turbo's TurboJPEG API.
//
// Same pixels on every thread, rank and x86-64 machine: the flags are fixed
// (turbojpeg_decode_flags) and select the accurate integer IDCT. libjpeg-turbo's README
// ("Mathematical Compatibility") states that its output matches libjpeg v6b except with the
// floating-point DCT/IDCT, so which SIMD extension the CPU offers does not change the integer
// IDCT's pixels. Smooth ("fancy")
// chroma upsampling, the TurboJPEG default, is kept for the same reason: it is one fixed
// algorithm, whereas merged upsampling would make the pixels depend on a flag.

#include <turbojpeg.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "conflux/data/io/turbojpeg_handle.hpp"
#include "image_decode_parts.hpp"

namespace conflux::data::detail {

namespace {

// The error text of the failed call on `handle`: a TurboJPEG warning is named as one, since
// other decoders would have returned a (damaged) image for it. The thread's handle is renewed:
// a failed call may leave its state behind (turbojpeg_handle.hpp).
[[noreturn]] void throw_jpeg_error(tjhandle handle, const char* step, const std::string& where) {
  const bool warning = tjGetErrorCode(handle) == TJERR_WARNING;
  std::string message = fmt::format(
      "{}: {} JPEG: {}: {}{}", where, warning ? "truncated or damaged" : "corrupt", step,
      tjGetErrorStr2(handle), warning ? " (a libjpeg-turbo warning, treated as an error)" : "");
  TurboJpegHandle::renew_thread_decompressor();
  throw CorruptSampleError(std::move(message), __FILE__, __LINE__);
}

// The smallest scale k/8 (k = 1..8) whose shorter side is still >= min_short_side; 1/1 when
// none is (or when min_short_side is 0). Factors above 1 (TurboJPEG offers up to 2/1) would
// upscale, and only multiples of 1/8 are taken, so that the candidates are the same eight
// scaled IDCTs whatever other factors a library version lists. The choice depends only on the
// header's size, so every rank picks the same scale for a sample.
tjscalingfactor choose_scale(int width, int height, int min_short_side) {
  tjscalingfactor best{1, 1};
  if (min_short_side <= 0) return best;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom || (8 * f.num) % f.denom != 0) continue;
    if (std::min(TJSCALED(width, f), TJSCALED(height, f)) < min_short_side) continue;
    if (f.num * best.denom < best.num * f.denom) best = f;
  }
  return best;
}

PixelLayout layout_of(int colorspace) {
  if (colorspace == TJCS_GRAY) return PixelLayout::kGray;
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) return PixelLayout::kCmyk;
  return PixelLayout::kRgb;  // TJCS_RGB, TJCS_YCbCr
}

int pixel_format_of(PixelLayout layout) {
  if (layout == PixelLayout::kGray) return TJPF_GRAY;
  if (layout == PixelLayout::kCmyk) return TJPF_CMYK;
  return TJPF_RGB;
}

}  // namespace

JpegHeader read_jpeg_header(std::span<const std::uint8_t> bytes, const std::string& where) {
  tjhandle handle = TurboJpegHandle::thread_decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    throw_jpeg_error(handle, "reading the header", where);
  }
  check_dimensions(static_cast<std::uint64_t>(std::max(width, 0)),
                   static_cast<std::uint64_t>(std::max(height, 0)), "JPEG", where);
  return {width, height, layout_of(colorspace)};
}

void decode_jpeg(std::span<const std::uint8_t> bytes, const DecodeOptions& options,
                 const std::string& where, DecodedImage& out) {
  const auto [width, height, layout] = read_jpeg_header(bytes, where);
  tjhandle handle = TurboJpegHandle::thread_decompressor();
  const auto size = static_cast<unsigned long>(bytes.size());
  const tjscalingfactor scale = choose_scale(width, height, options.min_short_side);
  const int scaled_width = TJSCALED(width, scale);
  const int scaled_height = TJSCALED(height, scale);
  const std::size_t pixels =
      static_cast<std::size_t>(scaled_width) * static_cast<std::size_t>(scaled_height);

  std::uint8_t* target = nullptr;
  thread_local std::vector<std::uint8_t> interleaved;  // bounded by the largest image seen
  const bool direct = layout == PixelLayout::kGray && options.channels == 1;
  if (direct) {
    out.shape = ImageShape{1, scaled_height, scaled_width};  // already CHW: no copy
    out.pixels.resize(pixels);
    target = out.pixels.data();
  } else {
    interleaved.resize(pixels * static_cast<std::size_t>(bytes_per_pixel(layout)));
    target = interleaved.data();
  }
  if (tjDecompress2(handle, bytes.data(), size, target, scaled_width, 0, scaled_height,
                    pixel_format_of(layout), turbojpeg_decode_flags()) != 0) {
    throw_jpeg_error(handle, "decoding", where);
  }
  if (!direct) {
    to_chw(interleaved.data(), scaled_width, scaled_height, layout, options.channels, out);
  }
}

}  // namespace conflux::data::detail
