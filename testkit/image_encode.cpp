// JPEG and PNG encoders for test images (image_encode.hpp). libpng's errors are handled as in
// src/data/io/png_decode.cpp: its longjmp lands in a function without C++ objects
// (write_rows), and the exception is thrown after libpng's frames are gone.

#include "image_encode.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <cstdio>
#include <new>

#include "conflux/core/error.hpp"
#include "conflux/data/io/turbojpeg_handle.hpp"

namespace conflux::testkit {

namespace {

struct PngSink {
  std::vector<std::uint8_t>* out = nullptr;
  char message[200] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void append_bytes(png_structp png, png_bytep data, std::size_t length) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  bool failed = false;
  try {
    sink->out->insert(sink->out->end(), data, data + length);
  } catch (const std::bad_alloc&) {
    failed = true;  // png_error only outside the handler: no longjmp out of a catch
  }
  if (failed) png_error(png, "out of memory");
}

void flush_nothing(png_structp) {}

// What one PNG holds: IHDR fields, the rows and an optional palette with transparency.
struct PngLayout {
  int width = 0;
  int height = 0;
  int bit_depth = 8;
  int color_type = PNG_COLOR_TYPE_RGB;
  bool interlaced = false;
  std::vector<png_color> palette{};
  std::vector<png_byte> trans{};
};

// False on a libpng error (the sink holds its text).
bool write_rows(png_structp png, png_infop info, const PngLayout* layout, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, static_cast<png_uint_32>(layout->width),
               static_cast<png_uint_32>(layout->height), layout->bit_depth, layout->color_type,
               layout->interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!layout->palette.empty()) {
    png_set_PLTE(png, info, layout->palette.data(), static_cast<int>(layout->palette.size()));
  }
  if (!layout->trans.empty()) {
    png_set_tRNS(png, info, layout->trans.data(), static_cast<int>(layout->trans.size()), nullptr);
  }
  png_write_info(png, info);
  if (layout->interlaced) png_set_interlace_handling(png);  // png_write_image runs the passes
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

// Encodes rows of `row_bytes` bytes each (big-endian samples for 16 bits).
std::vector<std::uint8_t> write_png(const PngLayout& layout, const std::uint8_t* data,
                                    std::size_t row_bytes) {
  std::vector<std::uint8_t> out;
  PngSink sink{.out = &out};
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_png_error, on_png_warning);
  CONFLUX_CHECK(png != nullptr, "libpng: cannot create a write struct");
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep> rows(static_cast<std::size_t>(layout.height));
  for (std::size_t y = 0; y < rows.size(); ++y) {
    rows[y] = const_cast<png_bytep>(data + y * row_bytes);  // libpng only reads them
  }
  png_set_write_fn(png, &sink, append_bytes, flush_nothing);
  const bool ok = info != nullptr && write_rows(png, info, &layout, rows.data());
  png_destroy_write_struct(&png, &info);
  CONFLUX_CHECK(ok, "libpng: cannot encode a {}x{} PNG: {}", layout.width, layout.height,
                sink.message);
  return out;
}

int png_color_type(PixelKind kind) {
  switch (kind) {
    case PixelKind::kGray:
      return PNG_COLOR_TYPE_GRAY;
    case PixelKind::kGrayAlpha:
      return PNG_COLOR_TYPE_GRAY_ALPHA;
    case PixelKind::kRgb:
      return PNG_COLOR_TYPE_RGB;
    case PixelKind::kRgba:
      return PNG_COLOR_TYPE_RGB_ALPHA;
    case PixelKind::kCmyk:
      break;
  }
  CONFLUX_RUNTIME_ERROR("PNG has no CMYK colour type");
}

void check_size(int width, int height, PixelKind kind, std::size_t samples) {
  CONFLUX_CHECK(width > 0 && height > 0, "image to encode is empty ({}x{})", width, height);
  CONFLUX_CHECK(samples == static_cast<std::size_t>(width) * height * channels_of(kind),
                "image to encode has {} samples, not {}x{}x{}", samples, width, height,
                channels_of(kind));
}

}  // namespace

int channels_of(PixelKind kind) noexcept {
  switch (kind) {
    case PixelKind::kGray:
      return 1;
    case PixelKind::kGrayAlpha:
      return 2;
    case PixelKind::kRgb:
      return 3;
    case PixelKind::kRgba:
    case PixelKind::kCmyk:
      return 4;
  }
  return 0;
}

std::vector<std::uint8_t> encode_jpeg(const RawImage& image, int quality, Chroma chroma) {
  check_size(image.width, image.height, image.kind, image.pixels.size());
  int format = TJPF_RGB;
  int subsampling = chroma == Chroma::k444 ? TJSAMP_444 : TJSAMP_420;
  if (image.kind == PixelKind::kGray) {
    format = TJPF_GRAY;
    subsampling = TJSAMP_GRAY;
  } else if (image.kind == PixelKind::kCmyk) {
    format = TJPF_CMYK;
  } else {
    CONFLUX_CHECK(image.kind == PixelKind::kRgb, "JPEG holds gray, RGB or CMYK, not alpha");
  }
  const data::TurboJpegHandle handle = data::TurboJpegHandle::compressor();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  // The fast forward DCT is TurboJPEG's default for compression; named so it stays fixed.
  const int rc = tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height,
                             format, &jpeg, &size, subsampling, quality, TJFLAG_FASTDCT);
  std::vector<std::uint8_t> out;
  if (rc == 0) out.assign(jpeg, jpeg + size);
  tjFree(jpeg);
  CONFLUX_CHECK(rc == 0, "TurboJPEG: cannot encode a {}x{} JPEG: {}", image.width, image.height,
                tjGetErrorStr2(handle.get()));
  return out;
}

std::vector<std::uint8_t> encode_png(const RawImage& image, bool interlaced) {
  check_size(image.width, image.height, image.kind, image.pixels.size());
  const PngLayout layout{.width = image.width,
                         .height = image.height,
                         .color_type = png_color_type(image.kind),
                         .interlaced = interlaced};
  return write_png(layout, image.pixels.data(),
                   static_cast<std::size_t>(image.width) * channels_of(image.kind));
}

std::vector<std::uint8_t> encode_png16(int width, int height, PixelKind kind,
                                       const std::vector<std::uint16_t>& samples) {
  check_size(width, height, kind, samples.size());
  std::vector<std::uint8_t> big_endian(samples.size() * 2);  // PNG's byte order
  for (std::size_t i = 0; i < samples.size(); ++i) {
    big_endian[2 * i] = static_cast<std::uint8_t>(samples[i] >> 8);
    big_endian[2 * i + 1] = static_cast<std::uint8_t>(samples[i] & 0xFF);
  }
  const PngLayout layout{
      .width = width, .height = height, .bit_depth = 16, .color_type = png_color_type(kind)};
  return write_png(layout, big_endian.data(),
                   static_cast<std::size_t>(width) * channels_of(kind) * 2);
}

std::vector<std::uint8_t> encode_png_palette(
    int width, int height, const std::vector<std::array<std::uint8_t, 3>>& palette,
    const std::vector<std::uint8_t>& indices, const std::vector<std::uint8_t>& alpha) {
  check_size(width, height, PixelKind::kGray, indices.size());
  CONFLUX_CHECK(!palette.empty() && palette.size() <= 256 && alpha.size() <= palette.size(),
                "palette of {} entries with {} alpha values", palette.size(), alpha.size());
  PngLayout layout{.width = width, .height = height, .color_type = PNG_COLOR_TYPE_PALETTE};
  for (const auto& c : palette) layout.palette.push_back(png_color{c[0], c[1], c[2]});
  layout.trans.assign(alpha.begin(), alpha.end());
  return write_png(layout, indices.data(), static_cast<std::size_t>(width));
}

}  // namespace conflux::testkit
