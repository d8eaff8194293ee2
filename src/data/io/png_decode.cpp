// PNG decoding through libpng.
//
// libpng reports errors by longjmp. A longjmp must never cross a C++ frame that owns objects
// with destructors, and an exception must never cross libpng's C frames. So every libpng call
// that may fail runs inside a small function whose only locals are plain values and which
// sets its own jump target (read_header, read_pixels): on an error it returns false with
// libpng's message, and the C++ code around it throws once libpng's frames are gone.
// Everything with a destructor (the buffers, the png_struct's owner) lives outside them.

#include <png.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "image_decode_parts.hpp"

namespace conflux::data::detail {

namespace {

// What the callbacks share: the bytes being read and the last error's text.
struct PngState {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t offset = 0;
  char message[200] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

// Warnings are problems libpng recovered from with complete pixels (say a bad ancillary
// chunk or an odd sRGB profile): not worth a line per sample.
void on_png_warning(png_structp, png_const_charp) {}

void read_from_memory(png_structp png, png_bytep out, std::size_t length) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (length > state->size - state->offset) png_error(png, "unexpected end of file");
  std::memcpy(out, state->data + state->offset, length);
  state->offset += length;
}

// Owns the png_struct and its info struct.
class PngReader {
 public:
  explicit PngReader(PngState& state)
      : png_(png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_png_error, on_png_warning)) {
    CONFLUX_CHECK(png_ != nullptr, "libpng: cannot create a read struct");
    info_ = png_create_info_struct(png_);
    if (info_ == nullptr) png_destroy_read_struct(&png_, nullptr, nullptr);
    CONFLUX_CHECK(info_ != nullptr, "libpng: cannot create an info struct");
    png_set_read_fn(png_, &state, read_from_memory);
  }
  ~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
  png_structp png() const noexcept { return png_; }
  png_infop info() const noexcept { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

// The decoded geometry after the transformations below.
struct PngGeometry {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int channels = 0;  // 1 (gray) or 3 (RGB)
  std::size_t row_bytes = 0;
};

// Reads the header and asks libpng for 8-bit gray or RGB without alpha; gray is widened to
// RGB by libpng when `channels` is 3. False on a libpng error (state.message says why).
bool read_header(png_structp png, png_infop info, int channels, PngGeometry* geometry) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  png_set_scale_16(png);        // 16 -> 8 bits, rounded to nearest
  png_set_palette_to_rgb(png);  // only acts on palette images
  png_set_expand_gray_1_2_4_to_8(png);
  png_set_strip_alpha(png);  // also cancels the tRNS expansion: transparency is dropped
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && channels == 3) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  geometry->width = png_get_image_width(png, info);
  geometry->height = png_get_image_height(png, info);
  geometry->channels = png_get_channels(png, info);
  geometry->row_bytes = png_get_rowbytes(png, info);
  return true;
}

// Reads every row (all passes of an interlaced image) and the chunks after them, so that a
// file cut short after its pixels is still an error. False on a libpng error.
bool read_pixels(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

[[noreturn]] void throw_png_error(const PngState& state, const std::string& where) {
  throw CorruptSampleError(
      fmt::format("{}: corrupt or truncated PNG: {}", where,
                  state.message[0] != '\0' ? state.message : "unknown libpng error"),
      __FILE__, __LINE__);
}

}  // namespace

void decode_png(std::span<const std::uint8_t> bytes, const DecodeOptions& options,
                const std::string& where, DecodedImage& out) {
  PngState state;
  state.data = bytes.data();
  state.size = bytes.size();
  PngReader reader(state);
  PngGeometry geometry;
  if (!read_header(reader.png(), reader.info(), options.channels, &geometry)) {
    throw_png_error(state, where);
  }
  check_dimensions(geometry.width, geometry.height, "PNG", where);
  CONFLUX_CHECK(geometry.channels == 1 || geometry.channels == 3,
                "{}: libpng gave {} channels after conversion (expected 1 or 3)", where,
                geometry.channels);
  CONFLUX_CHECK(geometry.row_bytes == std::size_t{geometry.width} * geometry.channels,
                "{}: libpng gave {}-byte rows for {} pixels of {} bytes", where, geometry.row_bytes,
                geometry.width, geometry.channels);

  thread_local std::vector<std::uint8_t> interleaved;  // bounded by the largest image seen
  thread_local std::vector<png_bytep> rows;
  interleaved.resize(geometry.row_bytes * geometry.height);
  rows.resize(geometry.height);
  for (png_uint_32 y = 0; y < geometry.height; ++y)
    rows[y] = interleaved.data() + y * geometry.row_bytes;
  if (!read_pixels(reader.png(), reader.info(), rows.data())) throw_png_error(state, where);
  to_chw(interleaved.data(), static_cast<int>(geometry.width), static_cast<int>(geometry.height),
         geometry.channels == 1 ? PixelLayout::kGray : PixelLayout::kRgb, options.channels, out);
}

}  // namespace conflux::data::detail
