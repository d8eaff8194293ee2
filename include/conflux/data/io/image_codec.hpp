#pragma once
/// @file image_codec.hpp
/// Decoding of encoded samples (JPEG through libjpeg-turbo's TurboJPEG API, PNG through
/// libpng) to uint8 CHW pixels with a fixed channel count. Every rank and thread decodes with
/// the same library calls and options, so decoded pixels never depend on where a sample was
/// decoded (docs/design.md invariant 2).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::data {

/// A decoded image: shape.size() bytes, CHW.
struct DecodedImage {
  ImageShape shape;
  std::vector<std::uint8_t> pixels;
};

/// The encodings decode_image understands, told apart by their magic bytes.
enum class ImageFormat { kUnknown, kJpeg, kPng };

/// The format `bytes` start with (kUnknown for anything else, empty or too short input).
ImageFormat sniff_format(std::span<const std::uint8_t> bytes) noexcept;

/// How to decode.
struct DecodeOptions {
  int channels = 3;  ///< 1 (grayscale) or 3 (RGB): what every image is converted to
  /// JPEG only: when > 0, decode at the smallest libjpeg-turbo scale (1/8 .. 1) whose shorter
  /// side is still >= this many pixels (the scaled IDCT; 0 = always full size).
  int min_short_side = 0;
};

/// A sample that is not a decodable image (corrupt, truncated, empty, another format): the
/// error data.on_corrupt = "skip" skips. Exit code 2 like every bad input.
class CorruptSampleError : public InputError {
 public:
  using InputError::InputError;
};

/// Decodes a JPEG or PNG image into `out` (its buffer reused), converting grayscale, CMYK,
/// palette and alpha images to options.channels. CorruptSampleError "<where>: <why>" when the
/// bytes are not a complete, valid JPEG or PNG.
void decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options,
                  const std::string& where, DecodedImage& out);

}  // namespace conflux::data
