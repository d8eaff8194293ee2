// Decoding of encoded samples: format sniffing, the dispatch to the JPEG and PNG decoders
// (jpeg_decode.cpp, png_decode.cpp), and the one conversion to CHW that both use.
//
// Colour rules (the same for JPEG and PNG, so a dataset mixing them is decoded consistently):
// - Pixels are the stored sample values: no gamma, ICC profile or colour management is applied.
// - Gray to RGB replicates the gray value into R, G and B.
// - RGB to gray is ITU-R BT.601 luma with libjpeg's 16-bit integer weights,
//   Y = (19595 R + 38470 G + 7471 B + 32768) >> 16 (0.299, 0.587, 0.114, rounded), applied to
//   the decoded RGB pixels. A colour JPEG asked for 1 channel is therefore decoded to RGB
//   first rather than taking its Y plane, so that a JPEG and a PNG of the same pixels agree.
// - CMYK (JPEG only) is read as Adobe writes it, inverted (0 = full ink, 255 = none), which is
//   what Photoshop produces and what libjpeg-turbo's own tools assume:
//   R = C*K/255, G = M*K/255, B = Y*K/255, rounded to nearest.
// - Alpha (PNG) is dropped: the stored colour values are kept, not composited on a background.
// - 16-bit PNG samples are scaled to 8 bits, rounded to nearest (libpng's png_set_scale_16).

#include "conflux/data/io/image_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "image_decode_parts.hpp"

namespace conflux::data {

namespace {

constexpr std::array<std::uint8_t, 3> kJpegMagic = {0xFF, 0xD8, 0xFF};
constexpr std::array<std::uint8_t, 8> kPngMagic = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

template <std::size_t N>
bool starts_with(std::span<const std::uint8_t> bytes, const std::array<std::uint8_t, N>& magic) {
  return bytes.size() >= N && std::equal(magic.begin(), magic.end(), bytes.begin());
}

// The first bytes of an unknown file as text for the error message, e.g. 'hell' or
// '\x00\x01..'. Enough to tell a text file, an HTML error page or another format apart.
std::string leading_bytes(std::span<const std::uint8_t> bytes) {
  std::string text;
  for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 4); ++i) {
    const std::uint8_t c = bytes[i];
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'')
      text += static_cast<char>(c);
    else
      text += fmt::format("\\x{:02x}", c);
  }
  return text;
}

std::uint8_t bt601_luma(unsigned r, unsigned g, unsigned b) noexcept {
  return static_cast<std::uint8_t>((19595u * r + 38470u * g + 7471u * b + 32768u) >> 16);
}

// Adobe CMYK is stored inverted, so ink-free channels are 255 and R = C*K/255.
std::uint8_t cmyk_channel(unsigned c, unsigned k) noexcept {
  return static_cast<std::uint8_t>((c * k + 127u) / 255u);
}

void rgb_to_planes(const std::uint8_t* __restrict in, std::size_t n, std::uint8_t* __restrict r,
                   std::uint8_t* __restrict g, std::uint8_t* __restrict b) {
  for (std::size_t i = 0; i < n; ++i) {
    r[i] = in[3 * i];
    g[i] = in[3 * i + 1];
    b[i] = in[3 * i + 2];
  }
}

void cmyk_to_planes(const std::uint8_t* __restrict in, std::size_t n, std::uint8_t* __restrict r,
                    std::uint8_t* __restrict g, std::uint8_t* __restrict b) {
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned k = in[4 * i + 3];
    r[i] = cmyk_channel(in[4 * i], k);
    g[i] = cmyk_channel(in[4 * i + 1], k);
    b[i] = cmyk_channel(in[4 * i + 2], k);
  }
}

void to_gray(const std::uint8_t* in, std::size_t n, detail::PixelLayout layout, std::uint8_t* out) {
  if (layout == detail::PixelLayout::kGray) {
    std::memcpy(out, in, n);
  } else if (layout == detail::PixelLayout::kRgb) {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = bt601_luma(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned k = in[4 * i + 3];
      out[i] = bt601_luma(cmyk_channel(in[4 * i], k), cmyk_channel(in[4 * i + 1], k),
                          cmyk_channel(in[4 * i + 2], k));
    }
  }
}

}  // namespace

ImageFormat sniff_format(std::span<const std::uint8_t> bytes) noexcept {
  if (starts_with(bytes, kJpegMagic)) return ImageFormat::kJpeg;
  if (starts_with(bytes, kPngMagic)) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

void decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options,
                  const std::string& where, DecodedImage& out) {
  CONFLUX_REQUIRE(options.channels == 1 || options.channels == 3,
                  "{}: cannot decode to {} channels (1 or 3)", where, options.channels);
  CONFLUX_REQUIRE(options.min_short_side >= 0, "{}: min_short_side {} is negative", where,
                  options.min_short_side);
  switch (sniff_format(bytes)) {
    case ImageFormat::kJpeg:
      detail::decode_jpeg(bytes, options, where, out);
      return;
    case ImageFormat::kPng:
      detail::decode_png(bytes, options, where, out);
      return;
    case ImageFormat::kUnknown:
      break;
  }
  if (bytes.empty())
    throw CorruptSampleError(fmt::format("{}: empty file (0 bytes)", where), __FILE__, __LINE__);
  throw CorruptSampleError(
      fmt::format("{}: not a JPEG or PNG file (starts with '{}')", where, leading_bytes(bytes)),
      __FILE__, __LINE__);
}

namespace detail {

void check_dimensions(std::uint64_t width, std::uint64_t height, const char* format,
                      const std::string& where) {
  if (width == 0 || height == 0) {
    throw CorruptSampleError(
        fmt::format("{}: {} header gives an empty image ({}x{})", where, format, width, height),
        __FILE__, __LINE__);
  }
  // Divided rather than multiplied, so a header's 32-bit sizes cannot overflow the check.
  if (width > kMaxImagePixels || height > kMaxImagePixels / width) {
    throw CorruptSampleError(
        fmt::format("{}: {} of {}x{} pixels is larger than the limit of 2^28 pixels (16384 x "
                    "16384); refused before decoding",
                    where, format, width, height),
        __FILE__, __LINE__);
  }
}

void to_chw(const std::uint8_t* interleaved, int width, int height, PixelLayout layout,
            int channels, DecodedImage& out) {
  out.shape = ImageShape{channels, height, width};
  out.pixels.resize(out.shape.size());
  const std::size_t n = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  std::uint8_t* plane = out.pixels.data();
  if (channels == 1) {
    to_gray(interleaved, n, layout, plane);
  } else if (layout == PixelLayout::kGray) {
    for (int c = 0; c < 3; ++c) std::memcpy(plane + c * n, interleaved, n);
  } else if (layout == PixelLayout::kRgb) {
    rgb_to_planes(interleaved, n, plane, plane + n, plane + 2 * n);
  } else {
    cmyk_to_planes(interleaved, n, plane, plane + n, plane + 2 * n);
  }
}

}  // namespace detail

}  // namespace conflux::data
