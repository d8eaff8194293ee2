// The region decode (jpeg_region.hpp): a window decoded at scale k/8 holds exactly the pixels
// of the whole image decoded at k/8 by decode_image (odd sizes, 4:2:0 and 4:4:4 colour, gray,
// CMYK; windows at the image's edges and at offsets off libjpeg's iMCU grid), the scale is the
// smallest covering the requested size, and damaged data is a CorruptSampleError, also when
// the damage lies below the window. Test images are encoded in memory with conflux-bench's
// encoders (testkit/image_encode.hpp).
#include "conflux/data/io/jpeg_region.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "../../../testkit/image_encode.hpp"

namespace conflux::data {
namespace {

using testkit::PixelKind;
using testkit::RawImage;
using Bytes = std::vector<std::uint8_t>;

// Textured but JPEG-friendly: gradients plus a pattern that changes every few pixels, so a
// misplaced row or column shows.
RawImage textured(int width, int height, PixelKind kind) {
  return testkit::make_image(width, height, kind, [&](int x, int y, int c) {
    const int bump = ((x / 3 + y / 5) % 4) * 20;
    const int values[4] = {x * 160 / width + bump, y * 160 / height + 60 - bump / 2,
                           (x + y) * 200 / (width + height) + bump / 3, 255 - bump};
    return static_cast<double>(values[c]);
  });
}

DecodedImage whole(const Bytes& jpeg, int channels, int min_short_side) {
  DecodedImage out;
  decode_image(jpeg, DecodeOptions{channels, min_short_side}, "test/whole", out);
  return out;
}

RegionPlacement region(const Bytes& jpeg, const RegionRequest& request, DecodedImage& out) {
  JpegRegionDecoder decoder;
  decoder.read_header(jpeg, "test/region");
  return decoder.decode(request, out);
}

// `part` must equal `full` at placement's offset, every channel; the part must cover the
// request's window at the scale.
void expect_part_of(const DecodedImage& part, const RegionPlacement& p, const DecodedImage& full,
                    const PixelWindow& window, const std::string& what) {
  ASSERT_EQ(part.shape.channels, full.shape.channels) << what;
  // Exactly the whole pixels at the scale that the window touches.
  const int k = p.scale_eighths;
  EXPECT_EQ(p.top, window.top * k / 8) << what;
  EXPECT_EQ(p.left, window.left * k / 8) << what;
  EXPECT_EQ(p.top + part.shape.height,
            std::min((window.top + window.height) * k + 7, full.shape.height * 8) / 8)
      << what;
  EXPECT_EQ(p.left + part.shape.width,
            std::min((window.left + window.width) * k + 7, full.shape.width * 8) / 8)
      << what;
  ASSERT_LE(p.top + part.shape.height, full.shape.height) << what;
  ASSERT_LE(p.left + part.shape.width, full.shape.width) << what;
  int mismatches = 0;
  for (int c = 0; c < part.shape.channels; ++c) {
    for (int y = 0; y < part.shape.height; ++y) {
      for (int x = 0; x < part.shape.width; ++x) {
        const std::size_t a =
            (static_cast<std::size_t>(c) * part.shape.height + y) * part.shape.width + x;
        const std::size_t b =
            (static_cast<std::size_t>(c) * full.shape.height + p.top + y) * full.shape.width +
            p.left + x;
        mismatches += part.pixels[a] != full.pixels[b];
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// Windows at the corners, the edges, a single pixel, the whole image, and offsets that are
// neither multiples of 8 nor of 16 (libjpeg's iMCU for 4:2:0).
std::vector<PixelWindow> windows(int width, int height) {
  return {{0, 0, height, width},
          {0, 0, 17, 23},
          {height - 19, width - 13, 19, 13},
          {5, width - 40, height - 5, 40},
          {height / 3 + 1, 7, height / 2, width / 2 + 3},
          {height - 1, width - 1, 1, 1},
          {9, 25, 1, width - 30},
          {31, 33, height - 40, 1}};
}

void expect_exact_at_every_scale(const RawImage& image, const Bytes& jpeg, int channels) {
  // The short side is a multiple of 8, so that min_short_side = side * k / 8 makes
  // decode_image pick exactly scale k/8.
  const int side = std::min(image.width, image.height);
  ASSERT_EQ(side % 8, 0);
  for (int k = 1; k <= 8; ++k) {
    const DecodedImage full = whole(jpeg, channels, side * k / 8);
    ASSERT_EQ(full.shape.height, (image.height * k + 7) / 8);
    for (const PixelWindow& w : windows(image.width, image.height)) {
      DecodedImage part;
      const RegionPlacement p = region(jpeg, {channels, w, 0, 0, k}, part);
      EXPECT_EQ(p.scale_eighths, k);
      EXPECT_EQ(p.image_width, image.width);
      EXPECT_EQ(p.image_height, image.height);
      expect_part_of(part, p, full, w,
                     fmt::format("{}x{} kind {} to {} channel(s), scale {}/8, window {}x{} at "
                                 "({}, {})",
                                 image.width, image.height, static_cast<int>(image.kind), channels,
                                 k, w.width, w.height, w.left, w.top));
    }
  }
}

TEST(JpegRegion, ColourWindowsAreTheWholeDecodesPixelsAtEveryScale) {
  const RawImage image = textured(203, 160, PixelKind::kRgb);  // odd width
  expect_exact_at_every_scale(image, testkit::encode_jpeg(image, 90), 3);
  expect_exact_at_every_scale(image, testkit::encode_jpeg(image, 90), 1);
  expect_exact_at_every_scale(image, testkit::encode_jpeg(image, 92, testkit::Chroma::k444), 3);
}

TEST(JpegRegion, OddSizedColourImageAt420) {
  const RawImage image = textured(136, 97, PixelKind::kRgb);  // odd height, width 8 * 17
  const Bytes jpeg = testkit::encode_jpeg(image, 88);
  const DecodedImage full = whole(jpeg, 3, 0);
  for (const PixelWindow& w : windows(image.width, image.height)) {
    DecodedImage part;
    const RegionPlacement p = region(jpeg, {3, w, 0, 0, 8}, part);
    expect_part_of(part, p, full, w,
                   fmt::format("window {}x{} at ({}, {})", w.width, w.height, w.left, w.top));
  }
}

TEST(JpegRegion, GrayAndCmykFollowTheWholeDecodesColourRules) {
  const RawImage gray = textured(121, 88, PixelKind::kGray);
  expect_exact_at_every_scale(gray, testkit::encode_jpeg(gray, 90), 1);
  expect_exact_at_every_scale(gray, testkit::encode_jpeg(gray, 90), 3);  // replicated
  const RawImage cmyk = textured(99, 72, PixelKind::kCmyk);
  expect_exact_at_every_scale(cmyk, testkit::encode_jpeg(cmyk, 95, testkit::Chroma::k444), 3);
  expect_exact_at_every_scale(cmyk, testkit::encode_jpeg(cmyk, 95, testkit::Chroma::k444), 1);
}

TEST(JpegRegion, TheScaleIsTheSmallestThatCoversTheRequestedSize) {
  // Only 1/8, 2/8, 4/8 and 8/8 (the SIMD IDCTs): 3/8 would cover 800 px (300 >= 224).
  EXPECT_EQ(region_scale(1000, 800, 224, 224), 4);  // 800 * 2 / 8 = 200 < 224
  EXPECT_EQ(region_scale(896, 896, 224, 224), 2);   // exactly 224 at 2/8
  EXPECT_EQ(region_scale(895, 2000, 224, 224), 4);  // 895 * 2 / 8 < 224
  EXPECT_EQ(region_scale(447, 2000, 224, 224), 8);  // 447 * 4 / 8 < 224
  EXPECT_EQ(region_scale(100, 100, 224, 224), 8);   // an upscale: full size
  EXPECT_EQ(region_scale(5000, 5000, 224, 224), 1);
  EXPECT_EQ(region_scale(300, 300, 0, 0), 1);
  const RawImage image = textured(240, 176, PixelKind::kRgb);
  const Bytes jpeg = testkit::encode_jpeg(image, 90);
  DecodedImage part;
  const RegionPlacement p = region(jpeg, {3, {16, 40, 160, 200}, 40, 40, 0}, part);
  EXPECT_EQ(p.scale_eighths, 2);  // 160 * 2 / 8 = 40
  EXPECT_GE(part.shape.height, 40);
  EXPECT_GE(part.shape.width, 50);
}

// Expects CorruptSampleError naming the sample, from a decoder that then still works.
void expect_corrupt(const Bytes& jpeg, const PixelWindow& window, const std::string& needle) {
  JpegRegionDecoder decoder;
  DecodedImage out;
  try {
    decoder.read_header(jpeg, "damaged/file.jpg");
    decoder.decode({3, window, 0, 0, 8}, out);
    ADD_FAILURE() << "a damaged JPEG was decoded";
  } catch (const CorruptSampleError& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("damaged/file.jpg: ", 0), 0u) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
  // The same decoder goes on to decode a good image.
  const RawImage good = textured(48, 40, PixelKind::kRgb);
  const Bytes ok = testkit::encode_jpeg(good, 90);
  decoder.read_header(ok, "good.jpg");
  decoder.decode({3, {8, 8, 16, 16}, 0, 0, 8}, out);
  EXPECT_EQ(out.shape.channels, 3);
}

TEST(JpegRegion, DamagedDataIsACorruptSampleEvenBelowTheWindow) {
  const RawImage image = textured(160, 160, PixelKind::kRgb);
  const Bytes jpeg = testkit::encode_jpeg(image, 90);
  Bytes truncated(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() / 2));
  // The window's rows come from the first half of the data, which is intact: the whole
  // decode refuses this file, and so must the region decode.
  expect_corrupt(truncated, {0, 0, 16, 16}, "truncated or damaged JPEG");
  expect_corrupt(truncated, {100, 90, 50, 60}, "truncated or damaged JPEG");
  // A header cut short: TurboJPEG's header check refuses it first, as for the whole decode.
  expect_corrupt(Bytes(jpeg.begin(), jpeg.begin() + 40), {0, 0, 8, 8}, "header");
  // Garbage in place of the entropy-coded data: a libjpeg error, not exit().
  Bytes garbled = jpeg;
  std::size_t sos = 0;
  for (std::size_t i = 0; i + 1 < garbled.size(); ++i) {
    if (garbled[i] == 0xFF && garbled[i + 1] == 0xDA) sos = i;
  }
  ASSERT_GT(sos, 0u);
  for (std::size_t i = sos + 20; i < garbled.size() - 2; ++i) garbled[i] = 0xFF;
  expect_corrupt(garbled, {40, 40, 30, 30}, "JPEG");
}

TEST(JpegRegion, ThreadsDecodeTheSamePixels) {
  const RawImage image = textured(301, 224, PixelKind::kRgb);
  const Bytes jpeg = testkit::encode_jpeg(image, 90);
  const RegionRequest request{3, {37, 51, 150, 170}, 56, 56, 0};
  DecodedImage reference;
  const RegionPlacement p = region(jpeg, request, reference);
  EXPECT_EQ(p.scale_eighths, 4);  // 150 * 2 / 8 < 56 <= 150 * 4 / 8
  std::vector<DecodedImage> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] { region(jpeg, request, r); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r.pixels, reference.pixels);
}

}  // namespace
}  // namespace conflux::data
