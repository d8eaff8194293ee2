// The image codec: JPEG and PNG decode to CHW with the documented colour rules, every damaged
// input is a CorruptSampleError naming the sample, scaled JPEG decode picks the documented
// scale, and threads decode the same pixels. Test images are encoded in memory with
// the encoders conflux-bench shares with the tests (testkit/image_encode.hpp).
#include "conflux/data/io/image_codec.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "../../../testkit/image_encode.hpp"

namespace conflux::data {
namespace {

using testkit::PixelKind;
using testkit::RawImage;
using Bytes = std::vector<std::uint8_t>;

// Smooth, JPEG-friendly gradients, a different one per channel.
RawImage pattern(int width, int height, PixelKind kind) {
  return testkit::make_image(width, height, kind, [&](int x, int y, int c) {
    const int values[4] = {x * 255 / width, y * 255 / height, (x + y) * 255 / (width + height),
                           255 - x * 255 / width};
    return static_cast<double>(values[c]);
  });
}

// Deterministic noise, for exact (lossless) checks.
RawImage noise(int width, int height, PixelKind kind, unsigned seed) {
  RawImage image{width, height, kind, {}};
  image.pixels.resize(static_cast<std::size_t>(width) * height * testkit::channels_of(kind));
  for (auto& p : image.pixels) {
    seed = seed * 1103515245u + 12345u;
    p = static_cast<std::uint8_t>(seed >> 16);
  }
  return image;
}

// Channel c of an interleaved image as a plane: the CHW layout the decoder returns.
Bytes plane(const RawImage& image, int c) {
  const int channels = testkit::channels_of(image.kind);
  Bytes out;
  for (std::size_t i = c; i < image.pixels.size(); i += channels) out.push_back(image.pixels[i]);
  return out;
}

Bytes planes(const RawImage& image, std::initializer_list<int> channels) {
  Bytes out;
  for (int c : channels) {
    const Bytes p = plane(image, c);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

DecodedImage decode(const Bytes& bytes, int channels, int min_short_side = 0) {
  DecodedImage out;
  decode_image(bytes, DecodeOptions{channels, min_short_side}, "test/sample", out);
  return out;
}

double mean_abs_error(const Bytes& a, const Bytes& b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) sum += std::abs(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

// The documented RGB -> gray rule, written out independently of the codec.
std::uint8_t luma(unsigned r, unsigned g, unsigned b) {
  return static_cast<std::uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
}

// Expects CorruptSampleError (exit code 2) whose message contains every needle.
void expect_corrupt(const Bytes& bytes, const std::string& where,
                    std::initializer_list<std::string> needles) {
  DecodedImage out;
  try {
    decode_image(bytes, DecodeOptions{}, where, out);
    ADD_FAILURE() << "expected CorruptSampleError for " << where;
  } catch (const CorruptSampleError& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(where + ": ", 0), 0u) << message;
    for (const auto& n : needles) EXPECT_NE(message.find(n), std::string::npos) << message;
  }
}

Bytes text(const std::string& s) {
  return Bytes(s.begin(), s.end());
}

TEST(ImageCodec, SniffsTheFormatFromMagicBytes) {
  EXPECT_EQ(sniff_format(testkit::encode_jpeg(pattern(8, 8, PixelKind::kRgb), 90)),
            ImageFormat::kJpeg);
  EXPECT_EQ(sniff_format(testkit::encode_png(pattern(8, 8, PixelKind::kRgb))), ImageFormat::kPng);
  EXPECT_EQ(sniff_format(text("GIF89a")), ImageFormat::kUnknown);
  EXPECT_EQ(sniff_format(Bytes{0xFF, 0xD8}), ImageFormat::kUnknown);  // too short
  EXPECT_EQ(sniff_format(Bytes{}), ImageFormat::kUnknown);
}

TEST(ImageCodec, RgbJpegDecodesCloseToItsSourceAndTheSameEveryTime) {
  const RawImage source = pattern(64, 48, PixelKind::kRgb);
  const Bytes jpeg = testkit::encode_jpeg(source, 95, testkit::Chroma::k444);
  const DecodedImage first = decode(jpeg, 3);
  EXPECT_EQ(first.shape, (ImageShape{3, 48, 64}));
  EXPECT_LT(mean_abs_error(first.pixels, planes(source, {0, 1, 2})), 2.0);
  DecodedImage reused = decode(testkit::encode_png(noise(100, 90, PixelKind::kRgb, 1)), 3);
  decode_image(jpeg, DecodeOptions{}, "again", reused);  // a reused, larger buffer
  EXPECT_EQ(reused.shape, first.shape);
  EXPECT_EQ(reused.pixels, first.pixels);
}

TEST(ImageCodec, RgbPngRoundTripsExactly) {
  const RawImage source = noise(37, 21, PixelKind::kRgb, 7);
  const DecodedImage out = decode(testkit::encode_png(source), 3);
  EXPECT_EQ(out.shape, (ImageShape{3, 21, 37}));
  EXPECT_EQ(out.pixels, planes(source, {0, 1, 2}));
  const Bytes adam7 = testkit::encode_png(source, true);
  ASSERT_EQ(adam7.at(28), 1) << "IHDR interlace method";
  const DecodedImage interlaced = decode(adam7, 3);
  EXPECT_EQ(interlaced.shape, out.shape);
  EXPECT_EQ(interlaced.pixels, out.pixels) << "Adam7-interlaced PNG";
}

TEST(ImageCodec, GrayImagesAreReplicatedIntoThreeChannels) {
  const RawImage gray = noise(20, 10, PixelKind::kGray, 3);
  const DecodedImage png = decode(testkit::encode_png(gray), 3);
  EXPECT_EQ(png.shape, (ImageShape{3, 10, 20}));
  EXPECT_EQ(png.pixels, planes(gray, {0, 0, 0}));
  EXPECT_EQ(decode(testkit::encode_png(gray), 1).pixels, gray.pixels);

  const Bytes jpeg = testkit::encode_jpeg(pattern(40, 24, PixelKind::kGray), 90);
  const DecodedImage one = decode(jpeg, 1);
  const DecodedImage three = decode(jpeg, 3);
  EXPECT_EQ(one.shape, (ImageShape{1, 24, 40}));
  EXPECT_EQ(three.shape, (ImageShape{3, 24, 40}));
  Bytes replicated = one.pixels;
  for (int c = 0; c < 2; ++c)
    replicated.insert(replicated.end(), one.pixels.begin(), one.pixels.end());
  EXPECT_EQ(three.pixels, replicated);
}

TEST(ImageCodec, RgbBecomesGrayByBt601IntegerWeightsForPngAndJpeg) {
  RawImage rgb = noise(16, 8, PixelKind::kRgb, 11);
  const std::uint8_t primaries[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};
  std::copy(std::begin(primaries), std::end(primaries), rgb.pixels.begin());
  const DecodedImage png = decode(testkit::encode_png(rgb), 1);
  ASSERT_EQ(png.shape, (ImageShape{1, 8, 16}));
  EXPECT_EQ(png.pixels[0], 76);   // 0.299 * 255
  EXPECT_EQ(png.pixels[1], 150);  // 0.587 * 255
  EXPECT_EQ(png.pixels[2], 29);   // 0.114 * 255
  EXPECT_EQ(png.pixels[3], 255);
  for (std::size_t i = 0; i < png.pixels.size(); ++i) {
    EXPECT_EQ(png.pixels[i], luma(rgb.pixels[3 * i], rgb.pixels[3 * i + 1], rgb.pixels[3 * i + 2]))
        << "pixel " << i;
  }
  // A colour JPEG: the same rule on its decoded RGB pixels, not its Y plane.
  const Bytes jpeg = testkit::encode_jpeg(pattern(48, 32, PixelKind::kRgb), 85);
  const DecodedImage color = decode(jpeg, 3);
  const DecodedImage gray = decode(jpeg, 1);
  const std::size_t n = 48 * 32;
  ASSERT_EQ(gray.pixels.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(gray.pixels[i], luma(color.pixels[i], color.pixels[n + i], color.pixels[2 * n + i]))
        << "pixel " << i;
  }
}

TEST(ImageCodec, PngAlphaIsDroppedNotComposited) {
  const RawImage rgba = noise(13, 9, PixelKind::kRgba, 5);  // alpha 0..255, some 0
  EXPECT_EQ(decode(testkit::encode_png(rgba), 3).pixels, planes(rgba, {0, 1, 2}));
  const RawImage gray_alpha = noise(13, 9, PixelKind::kGrayAlpha, 6);
  EXPECT_EQ(decode(testkit::encode_png(gray_alpha), 1).pixels, plane(gray_alpha, 0));
  EXPECT_EQ(decode(testkit::encode_png(gray_alpha), 3).pixels, planes(gray_alpha, {0, 0, 0}));
}

TEST(ImageCodec, PalettePngIsLookedUpWithTransparencyDropped) {
  const std::vector<std::array<std::uint8_t, 3>> palette = {
      {10, 20, 30}, {200, 100, 0}, {0, 255, 128}, {255, 255, 255}};
  Bytes indices;
  for (int i = 0; i < 12 * 5; ++i) indices.push_back(static_cast<std::uint8_t>((i * 7) % 4));
  Bytes expected(3 * indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    for (int c = 0; c < 3; ++c) expected[c * indices.size() + i] = palette[indices[i]][c];
  }
  EXPECT_EQ(decode(testkit::encode_png_palette(12, 5, palette, indices), 3).pixels, expected);
  EXPECT_EQ(decode(testkit::encode_png_palette(12, 5, palette, indices, {0, 128}), 3).pixels,
            expected);
}

TEST(ImageCodec, SixteenBitPngIsScaledToEightBitsRoundedToNearest) {
  const std::vector<std::uint16_t> values = {0,        65535, 128,  127,   32895, 32896,
                                             257 * 77, 40000, 1000, 65407, 65408, 12345};
  std::vector<std::uint16_t> rgb;
  for (std::size_t i = 0; i < 4 * 3; ++i) rgb.push_back(values[(i * 5) % values.size()]);
  const DecodedImage out = decode(testkit::encode_png16(2, 2, PixelKind::kRgb, rgb), 3);
  ASSERT_EQ(out.shape, (ImageShape{3, 2, 2}));
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i) {
      const unsigned v = rgb[3 * i + c];
      EXPECT_EQ(out.pixels[c * 4 + i], (v * 255 + 32767) / 65535) << "16-bit value " << v;
    }
  }
  const DecodedImage gray = decode(testkit::encode_png16(12, 1, PixelKind::kGray, values), 1);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(gray.pixels[i], (values[i] * 255u + 32767) / 65535) << "16-bit value " << values[i];
  }
}

TEST(ImageCodec, CmykJpegIsReadAsAdobeInvertedCmyk) {
  // K = 255 is "no black ink" in inverted CMYK, so RGB = (C, M, Y); a grey K halves them.
  for (const int k : {255, 128}) {
    RawImage cmyk = pattern(32, 32, PixelKind::kCmyk);
    Bytes expected(3 * 32 * 32);
    for (std::size_t i = 0; i < 32 * 32; ++i) {
      cmyk.pixels[4 * i + 3] = static_cast<std::uint8_t>(k);
      for (int c = 0; c < 3; ++c)
        expected[c * 32 * 32 + i] = (cmyk.pixels[4 * i + c] * k + 127) / 255;
    }
    const DecodedImage out = decode(testkit::encode_jpeg(cmyk, 95, testkit::Chroma::k444), 3);
    EXPECT_EQ(out.shape, (ImageShape{3, 32, 32}));
    EXPECT_LT(mean_abs_error(out.pixels, expected), 2.0) << "K = " << k;
  }
}

TEST(ImageCodec, TruncatedJpegIsCorruptNotGreyFilled) {
  const Bytes jpeg = testkit::encode_jpeg(pattern(64, 64, PixelKind::kRgb), 95);
  expect_corrupt(Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2), "data/cat/7.jpg",
                 {"truncated or damaged JPEG", "Premature end"});
  expect_corrupt(Bytes(jpeg.begin(), jpeg.end() - 2), "no-eoi.jpg", {"JPEG"});  // EOI cut off
  expect_corrupt(Bytes(jpeg.begin(), jpeg.begin() + 20), "header-only.jpg", {"JPEG"});
  Bytes garbage = {0xFF, 0xD8, 0xFF};
  garbage.resize(300, 0x5A);
  expect_corrupt(garbage, "garbage.jpg", {"corrupt JPEG"});
  // The failed header read must not spoil the thread's next decode (libjpeg-turbo 2.1 leaves
  // its state in the handle).
  EXPECT_EQ(decode(jpeg, 3).shape, (ImageShape{3, 64, 64}));
}

TEST(ImageCodec, NonImagesAndEmptyFilesNameTheSample) {
  expect_corrupt(text("hello, this is text\n"), "/data/train/cat/1.jpg",
                 {"not a JPEG or PNG file (starts with 'hell')"});
  expect_corrupt(Bytes{0x00, 0x01, 'G'}, "b.png", {"starts with '\\x00\\x01G'"});
  expect_corrupt(Bytes{}, "/data/train/dog/0.jpg", {"empty file (0 bytes)"});
}

TEST(ImageCodec, TruncatedOrCorruptedPngIsCorrupt) {
  const Bytes png = testkit::encode_png(noise(40, 40, PixelKind::kRgb, 9));
  expect_corrupt(Bytes(png.begin(), png.begin() + png.size() / 2), "half.png", {"PNG"});
  expect_corrupt(Bytes(png.begin(), png.end() - 12), "no-iend.png", {"PNG"});
  Bytes flipped = png;
  flipped[png.size() / 2] ^= 0x40;  // inside IDAT: its CRC no longer matches
  expect_corrupt(flipped, "flipped.png", {"corrupt or truncated PNG"});
  expect_corrupt(Bytes(png.begin(), png.begin() + 8), "signature-only.png", {"PNG"});
}

// Rewrites a PNG's IHDR size and its CRC, so the header claims another size.
Bytes with_png_size(Bytes png, std::uint32_t width, std::uint32_t height) {
  for (int i = 0; i < 4; ++i) {
    png[16 + i] = static_cast<std::uint8_t>(width >> (24 - 8 * i));
    png[20 + i] = static_cast<std::uint8_t>(height >> (24 - 8 * i));
  }
  const auto crc = static_cast<std::uint32_t>(crc32(0, png.data() + 12, 17));
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
  return png;
}

TEST(ImageCodec, AbsurdDimensionsAreRefusedBeforeDecoding) {
  const Bytes png = testkit::encode_png(noise(4, 4, PixelKind::kRgb, 2));
  expect_corrupt(with_png_size(png, 20000, 20000), "huge.png", {"20000x20000", "2^28"});
  Bytes jpeg = testkit::encode_jpeg(pattern(16, 16, PixelKind::kRgb), 90);
  for (std::size_t i = 0; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {  // SOF0: height at +5, width at +7
      jpeg[i + 5] = jpeg[i + 7] = 0x4E;            // 20000 = 0x4E20
      jpeg[i + 6] = jpeg[i + 8] = 0x20;
      break;
    }
  }
  expect_corrupt(jpeg, "huge.jpg", {"20000x20000", "2^28"});
}

TEST(ImageCodec, ScaledJpegDecodePicksTheSmallestEighthKeepingTheShortSide) {
  const Bytes jpeg = testkit::encode_jpeg(pattern(400, 300, PixelKind::kRgb), 90);
  // Scaled sizes round up: 300 * 3/8 = 112.5 -> 113.
  EXPECT_EQ(decode(jpeg, 3, 100).shape, (ImageShape{3, 113, 150}));  // 3/8: 2/8 gives 75
  EXPECT_EQ(decode(jpeg, 3, 75).shape, (ImageShape{3, 75, 100}));    // 1/4 exactly
  EXPECT_EQ(decode(jpeg, 3, 76).shape, (ImageShape{3, 113, 150}));
  EXPECT_EQ(decode(jpeg, 1, 1).shape, (ImageShape{1, 38, 50}));      // 1/8
  EXPECT_EQ(decode(jpeg, 3, 290).shape, (ImageShape{3, 300, 400}));  // 8/8: 7/8 gives 263
  EXPECT_EQ(decode(jpeg, 3, 263).shape, (ImageShape{3, 263, 350}));
  EXPECT_EQ(decode(jpeg, 3, 1000).shape, (ImageShape{3, 300, 400}));  // never upscaled
  EXPECT_EQ(decode(jpeg, 3, 100).pixels, decode(jpeg, 3, 100).pixels);
  const Bytes png = testkit::encode_png(noise(400, 300, PixelKind::kRgb, 4));
  EXPECT_EQ(decode(png, 3, 100).shape, (ImageShape{3, 300, 400}));  // PNG: always full size
}

TEST(ImageCodec, OptionsOutsideTheContractAreInputErrors) {
  const Bytes png = testkit::encode_png(noise(4, 4, PixelKind::kRgb, 2));
  DecodedImage out;
  EXPECT_THROW(decode_image(png, DecodeOptions{2, 0}, "x.png", out), InputError);
  EXPECT_THROW(decode_image(png, DecodeOptions{3, -1}, "x.png", out), InputError);
}

TEST(ImageCodec, ThreadsDecodeTheSamePixels) {
  const std::vector<Bytes> files = {
      testkit::encode_jpeg(pattern(120, 80, PixelKind::kRgb), 90),
      testkit::encode_jpeg(pattern(64, 64, PixelKind::kGray), 80),
      testkit::encode_jpeg(pattern(48, 40, PixelKind::kCmyk), 90, testkit::Chroma::k444),
      testkit::encode_png(noise(50, 30, PixelKind::kRgba, 8)),
  };
  std::vector<Bytes> reference;
  for (const auto& f : files) reference.push_back(decode(f, 3, 0).pixels);
  std::vector<int> mismatches(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      DecodedImage out;
      for (int round = 0; round < 20; ++round) {
        for (std::size_t i = 0; i < files.size(); ++i) {
          decode_image(files[i], DecodeOptions{}, "thread", out);
          if (out.pixels != reference[i]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace conflux::data
