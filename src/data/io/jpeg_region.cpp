// Region decode of JPEGs through libjpeg-turbo's libjpeg API.
//
// Same pixels as decode_image (jpeg_decode.cpp) at the same scale: the settings are those
// TurboJPEG's tjDecompress2 applies for conflux's flags (turbojpeg_decode_flags): the accurate
// integer IDCT, smooth ("fancy") upsampling, the same output colour spaces, warnings treated
// as errors and at most 500 progressive scans. Both are the same library's code, so only the
// rows and columns that are produced differ. The header is read by TurboJPEG first, so that
// both decoders accept and refuse the same files.
//
// libjpeg reports errors through error_exit, whose default calls exit(). Here it longjmps back
// to the setjmp of the step that called libjpeg; those steps are written C-style (no objects
// with destructors between the setjmp and libjpeg), and the C++ caller turns the saved message
// into a CorruptSampleError.

#include "conflux/data/io/jpeg_region.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <cstring>
#include <vector>

#include <jpeglib.h>

#include "conflux/core/error.hpp"
#include "image_decode_parts.hpp"

namespace conflux::data {

namespace {

// TurboJPEG's TJFLAG_LIMITSCANS bound: a progressive JPEG with more scans is refused rather
// than decoded for minutes (a known denial-of-service shape).
constexpr int kMaxScans = 500;

// libjpeg casts cinfo->err to this, so `pub` must come first.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool warning;
};

ErrorManager& manager_of(j_common_ptr cinfo) {
  return *reinterpret_cast<ErrorManager*>(cinfo->err);
}

// error_exit: never returns to libjpeg (its default would call exit()).
extern "C" void on_error(j_common_ptr cinfo) {
  ErrorManager& m = manager_of(cinfo);
  (*cinfo->err->format_message)(cinfo, m.message);
  m.warning = false;
  std::longjmp(m.jump, 1);
}

// emit_message: level -1 is a warning (corrupt data libjpeg would patch over with grey), an
// error here as with TJFLAG_STOPONWARNING; trace messages (level >= 0) are dropped.
extern "C" void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  ErrorManager& m = manager_of(cinfo);
  (*cinfo->err->format_message)(cinfo, m.message);
  m.warning = true;
  std::longjmp(m.jump, 1);
}

extern "C" void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number <= kMaxScans) return;
  ErrorManager& m = manager_of(cinfo);
  std::snprintf(m.message, sizeof m.message, "Progressive JPEG image has more than %d scans",
                kMaxScans);
  m.warning = false;
  std::longjmp(m.jump, 1);
}

J_COLOR_SPACE out_color_space(detail::PixelLayout layout) {
  if (layout == detail::PixelLayout::kGray) return JCS_GRAYSCALE;
  if (layout == detail::PixelLayout::kCmyk) return JCS_CMYK;
  return JCS_EXT_RGB;  // what TurboJPEG's TJPF_RGB selects
}

// Scaled pixels decoded beyond each side of the window: libjpeg-turbo 2.1's smooth upsampling
// treats the first and last column of a cropped scanline as the image's edge (measured: they
// differ from the whole decode's), so the window's columns must not be the region's outermost.
constexpr int kColumnMargin = 4;

// ceil(a * k / 8) and floor(a * k / 8) for a >= 0: libjpeg's scaled sizes use the former.
int scaled_up(int a, int k) {
  return static_cast<int>((static_cast<std::int64_t>(a) * k + 7) / 8);
}
int scaled_down(int a, int k) {
  return static_cast<int>(static_cast<std::int64_t>(a) * k / 8);
}

// Keeps `count` bytes from `first` of each of `rows` rows of `stride` bytes, packed in place.
void keep_columns(std::vector<std::uint8_t>& rows_data, int stride, int first, int count,
                  int rows) {
  std::uint8_t* data = rows_data.data();
  for (int y = 0; y < rows; ++y) {
    std::memmove(data + static_cast<std::size_t>(y) * count,
                 data + static_cast<std::size_t>(y) * stride + first,
                 static_cast<std::size_t>(count));
  }
}

}  // namespace

int region_scale(int window_height, int window_width, int min_height, int min_width) noexcept {
  // Only the scales whose IDCTs libjpeg-turbo 2.1 has in SIMD (8x8, 4x4, 2x2; 1x1 is the DC
  // term alone). 3/8, 5/8, 6/8 and 7/8 run plain-C IDCTs (for 4:2:0 chroma too, at twice the
  // size) that cost more per image than the full-size SIMD one (docs/datasets.md).
  for (int k : {1, 2, 4}) {
    if (static_cast<std::int64_t>(window_height) * k >= 8 * static_cast<std::int64_t>(min_height) &&
        static_cast<std::int64_t>(window_width) * k >= 8 * static_cast<std::int64_t>(min_width))
      return k;
  }
  return 8;
}

struct JpegRegionDecoder::State {
  jpeg_decompress_struct cinfo{};
  ErrorManager errors{};
  jpeg_progress_mgr progress{};
  bool created = false;
  std::span<const std::uint8_t> bytes;
  std::string where;
  detail::JpegHeader header;
  std::vector<std::uint8_t> interleaved;  // bounded by the largest region seen
  std::vector<JSAMPROW> rows;
  std::vector<std::uint8_t> spare_row;  // the last row, read only to reach the end of the data

  State() {
    cinfo.err = jpeg_std_error(&errors.pub);
    errors.pub.error_exit = on_error;
    errors.pub.emit_message = on_message;
    progress.progress_monitor = on_progress;
  }
  ~State() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }

  // Each step returns false with errors.message set when libjpeg failed; the decoder is then
  // reset for the next image.
  bool create();
  bool start(std::span<const std::uint8_t> data, int scale_eighths);
  bool read_region(JDIMENSION& left, JDIMENSION& width, JDIMENSION top, JDIMENSION height);
  [[noreturn]] void fail(const char* step);
};

bool JpegRegionDecoder::State::create() {
  if (setjmp(errors.jump) != 0) return false;
  jpeg_create_decompress(&cinfo);
  created = true;
  cinfo.progress = &progress;
  return true;
}

// Header, settings, and the start of the decompression at scale k/8.
bool JpegRegionDecoder::State::start(std::span<const std::uint8_t> data, int scale_eighths) {
  if (setjmp(errors.jump) != 0) return false;
  jpeg_abort_decompress(&cinfo);  // whatever an interrupted image left behind
  jpeg_mem_src(&cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = out_color_space(header.layout);
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  cinfo.scale_num = static_cast<unsigned>(scale_eighths);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  return true;
}

// Rows [top, top + height) of the columns from `left` (widened to the iMCU boundary, as both
// arguments then say), then the rest of the entropy-coded data, as a whole decode reads it.
bool JpegRegionDecoder::State::read_region(JDIMENSION& left, JDIMENSION& width, JDIMENSION top,
                                           JDIMENSION height) {
  if (setjmp(errors.jump) != 0) return false;
  jpeg_crop_scanline(&cinfo, &left, &width);
  const auto components = static_cast<std::size_t>(cinfo.output_components);
  interleaved.resize(static_cast<std::size_t>(width) * height * components);
  rows.resize(height);
  for (JDIMENSION y = 0; y < height; ++y)
    rows[y] = interleaved.data() + static_cast<std::size_t>(y) * width * components;
  if (top > 0) jpeg_skip_scanlines(&cinfo, top);
  while (cinfo.output_scanline < top + height) {
    const JDIMENSION done = cinfo.output_scanline - top;
    jpeg_read_scanlines(&cinfo, rows.data() + done, height - done);
  }
  // Skipping every row but the last and reading that one makes libjpeg decode the remaining
  // entropy-coded data (skipping to the very end would not), so a file damaged below the
  // region is refused as the whole decode refuses it.
  const JDIMENSION remaining = cinfo.output_height - cinfo.output_scanline;
  if (remaining > 0) {
    if (remaining > 1) jpeg_skip_scanlines(&cinfo, remaining - 1);
    spare_row.resize(static_cast<std::size_t>(width) * components);
    JSAMPROW row = spare_row.data();
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

void JpegRegionDecoder::State::fail(const char* step) {
  const bool warning = errors.warning;
  if (created) jpeg_abort_decompress(&cinfo);
  throw CorruptSampleError(
      fmt::format("{}: {} JPEG: {}: {}{}", where, warning ? "truncated or damaged" : "corrupt",
                  step, errors.message, warning ? " (a libjpeg warning, treated as an error)" : ""),
      __FILE__, __LINE__);
}

JpegRegionDecoder::JpegRegionDecoder() : state_(std::make_unique<State>()) {
  if (!state_->create()) {
    throw RuntimeError(
        fmt::format("libjpeg: cannot create a decompressor: {}", state_->errors.message), __FILE__,
        __LINE__);
  }
}

JpegRegionDecoder::~JpegRegionDecoder() = default;
JpegRegionDecoder::JpegRegionDecoder(JpegRegionDecoder&&) noexcept = default;
JpegRegionDecoder& JpegRegionDecoder::operator=(JpegRegionDecoder&&) noexcept = default;

PixelWindow JpegRegionDecoder::read_header(std::span<const std::uint8_t> bytes,
                                           const std::string& where) {
  State& s = *state_;
  s.bytes = {};
  s.header = detail::read_jpeg_header(bytes, where);
  s.bytes = bytes;
  s.where = where;
  return {0, 0, s.header.height, s.header.width};
}

RegionPlacement JpegRegionDecoder::decode(const RegionRequest& request, DecodedImage& out) {
  State& s = *state_;
  CONFLUX_CHECK(!s.bytes.empty(), "JpegRegionDecoder::decode without read_header");
  const PixelWindow& w = request.window;
  const int image_h = s.header.height, image_w = s.header.width;
  CONFLUX_CHECK(w.top >= 0 && w.left >= 0 && w.height > 0 && w.width > 0 &&
                    w.top + w.height <= image_h && w.left + w.width <= image_w,
                "{}: window {}x{} at ({}, {}) is not inside the {}x{} image", s.where, w.width,
                w.height, w.left, w.top, image_w, image_h);
  CONFLUX_CHECK(request.channels == 1 || request.channels == 3,
                "{}: cannot decode to {} channels (1 or 3)", s.where, request.channels);
  const int k = request.scale_eighths > 0
                    ? std::min(request.scale_eighths, 8)
                    : region_scale(w.height, w.width, request.min_height, request.min_width);
  // The whole pixels at the scale that the window touches, inside the scaled image.
  const int scaled_w = scaled_up(image_w, k);
  const int top = scaled_down(w.top, k);
  const int bottom = std::min(scaled_up(w.top + w.height, k), scaled_up(image_h, k));
  const int x0 = scaled_down(w.left, k);
  const int x1 = std::min(scaled_up(w.left + w.width, k), scaled_w);
  // Columns decoded: the margin on each side, then widened by libjpeg to its iMCU grid.
  auto left = static_cast<JDIMENSION>(std::max(x0 - kColumnMargin, 0));
  auto width = static_cast<JDIMENSION>(std::min(x1 + kColumnMargin, scaled_w)) - left;
  const std::span<const std::uint8_t> bytes = s.bytes;
  s.bytes = {};  // one decode per header
  if (!s.start(bytes, k)) s.fail("reading the header");
  if (!s.read_region(left, width, static_cast<JDIMENSION>(top),
                     static_cast<JDIMENSION>(bottom - top))) {
    s.fail("decoding");
  }
  const int pixel_bytes = detail::bytes_per_pixel(s.header.layout);
  keep_columns(s.interleaved, static_cast<int>(width) * pixel_bytes,
               (x0 - static_cast<int>(left)) * pixel_bytes, (x1 - x0) * pixel_bytes, bottom - top);
  detail::to_chw(s.interleaved.data(), x1 - x0, bottom - top, s.header.layout, request.channels,
                 out);
  return {image_w, image_h, k, top, x0};
}

}  // namespace conflux::data
