#pragma once
/// @file image_decode_parts.hpp
/// The pieces of decode_image (image_codec.cpp) shared by its JPEG and PNG decoders: the pixel
/// layouts they produce, the one conversion to CHW with the documented colour rules, and the
/// size guard. Internal to src/data/io.

#include <cstdint>
#include <span>
#include <string>

#include "conflux/data/io/image_codec.hpp"

namespace conflux::data::detail {

/// The most pixels (width x height) an image may have: 2^28, 16384 x 16384. Anything larger is
/// refused before its pixel buffer is allocated (a corrupt header can claim 4 billion).
inline constexpr std::uint64_t kMaxImagePixels = std::uint64_t{1} << 28;

/// What a decoder left in its interleaved (HWC) scratch buffer.
enum class PixelLayout { kGray, kRgb, kCmyk };

/// Bytes per pixel of `layout`.
constexpr int bytes_per_pixel(PixelLayout layout) noexcept {
  return layout == PixelLayout::kGray ? 1 : layout == PixelLayout::kRgb ? 3 : 4;
}

/// CorruptSampleError "<where>: <why>" unless width x height is a positive size within
/// kMaxImagePixels; `format` ("JPEG", "PNG") names the file type in the message.
void check_dimensions(std::uint64_t width, std::uint64_t height, const char* format,
                      const std::string& where);

/// Converts `width` x `height` interleaved pixels of `layout` into `out` (shape and pixels),
/// as `channels` (1 or 3) planes, CHW. The colour rules (docs in image_codec.cpp): gray is
/// replicated into R, G and B; RGB becomes gray by BT.601 integer weights; CMYK is Adobe
/// (inverted) CMYK, R = C*K/255 rounded.
void to_chw(const std::uint8_t* interleaved, int width, int height, PixelLayout layout,
            int channels, DecodedImage& out);

/// What a JPEG's header says, as TurboJPEG reads it.
struct JpegHeader {
  int width = 0;
  int height = 0;
  PixelLayout layout = PixelLayout::kRgb;  ///< what the decoders convert the colour space to
};

/// Reads and checks (check_dimensions) the header of a JPEG; CorruptSampleError naming
/// `where`. The one header check of the whole and the region decode, so both refuse the same
/// files.
JpegHeader read_jpeg_header(std::span<const std::uint8_t> bytes, const std::string& where);

/// Decodes a JPEG (sniffed already) into `out`; CorruptSampleError naming `where`.
void decode_jpeg(std::span<const std::uint8_t> bytes, const DecodeOptions& options,
                 const std::string& where, DecodedImage& out);

/// Decodes a PNG (sniffed already) into `out`; CorruptSampleError naming `where`.
void decode_png(std::span<const std::uint8_t> bytes, const DecodeOptions& options,
                const std::string& where, DecodedImage& out);

}  // namespace conflux::data::detail
