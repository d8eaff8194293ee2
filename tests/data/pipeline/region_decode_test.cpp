// transform.decode = "region" through the batch builder: where the crop needs the full scale
// the batch is the full decode's bit for bit (training and evaluation); at reduced DCT scales
// it stays close to it (stated tolerance); a sample's pixels do not depend on the builder,
// its thread count or the sample's place in the batch; PNGs keep the full decode; a truncated
// JPEG is still skipped under data.on_corrupt = "skip".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../../testkit/image_encode.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"

namespace conflux::data {
namespace {

using Bytes = std::vector<std::uint8_t>;

// A photo-like image: smooth shading plus `detail` (amplitude) a few pixels wide, different
// per sample.
testkit::RawImage photo(int width, int height, testkit::PixelKind kind, int seed, double detail) {
  return testkit::make_image(width, height, kind, [&](int x, int y, int c) {
    return 128 +
           70 * std::sin((x + 13 * seed) / (23.0 + 5 * c)) *
               std::cos((y - 7 * seed) / (31.0 + 3 * c)) +
           detail * std::sin((x + y + seed) / 5.0 + c);
  });
}

// Encoded images in memory: JPEG (every 4th gray) unless `png_every` picks a PNG.
class ImageSource final : public SampleSource {
 public:
  ImageSource(int n, int min_side, int max_side, int png_every = 0, double detail = 25) {
    info_.name = "images";
    info_.format = SampleFormat::kEncoded;
    info_.shape = {3, 0, 0};
    info_.num_classes = 2;
    for (int i = 0; i < n; ++i) {
      const int span = max_side - min_side + 1;
      const int w = min_side + (i * 37) % span, h = min_side + (i * 53 + 11) % span;
      const auto kind = i % 4 == 3 ? testkit::PixelKind::kGray : testkit::PixelKind::kRgb;
      const testkit::RawImage image = photo(w, h, kind, i, detail);
      files_.push_back(png_every > 0 && i % png_every == 0 ? testkit::encode_png(image)
                                                           : testkit::encode_jpeg(image, 90));
    }
  }
  void truncate(std::size_t i) { files_[i].resize(files_[i].size() / 2); }
  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return files_.size(); }
  model::Label label(std::size_t i) const override { return static_cast<model::Label>(i % 2); }
  void read(std::size_t i, Bytes& out) const override { out = files_[i]; }
  std::string where(std::size_t i) const override { return "img/" + std::to_string(i); }
  std::size_t resident_bytes() const noexcept override { return 0; }

 private:
  SourceInfo info_;
  std::vector<Bytes> files_;
};

TransformOptions options(int size, const char* decode) {
  TransformOptions o;
  o.resized_crop = size;
  o.hflip = true;
  o.mean = {0.5f};
  o.std = {0.25f};
  o.decode = decode;
  return o;
}

std::vector<std::uint32_t> all(const SampleSource& source) {
  std::vector<std::uint32_t> samples(source.size());
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<std::uint32_t>(i);
  return samples;
}

// The training batch as pixels, and the evaluation batch, for one decode setting.
struct Batches {
  std::vector<std::byte> pixels;
  std::vector<float> eval;
};

Batches build(const SampleSource& source, const TransformOptions& o, int threads,
              std::uint32_t epoch = 3) {
  const SampleTransform transform(o, source.info().shape);
  BatchBuilder builder(source, transform, threads);
  EXPECT_EQ(transform.region_decode(), o.decode == "region");
  const std::vector<std::uint32_t> samples = all(source);
  Batches b;
  b.pixels.resize(samples.size() * builder.bytes_per_sample());
  std::vector<model::Label> labels(samples.size());
  builder.build_train_encoded(samples, 17, epoch, b.pixels.data(), labels.data());
  model::Tensor images;
  builder.build_eval(0, source.size(), images, labels);
  b.eval = images.data;
  return b;
}

TEST(RegionDecode, WhereTheCropNeedsFullScaleTheBatchesAreTheFullDecodesBitForBit) {
  // Images of 40-70 px cropped and resized to 80: every crop is enlarged, so every region is
  // decoded at 8/8, and evaluation (shorter side to 91) too.
  const ImageSource source(16, 40, 70);
  const Batches region = build(source, options(80, "region"), 3);
  const Batches full = build(source, options(80, "full"), 3);
  EXPECT_EQ(region.pixels, full.pixels);
  EXPECT_EQ(region.eval, full.eval);
  // The heavy path (rotation and colour jitter after the crop, float batches) reads the part
  // through the same crop window.
  TransformOptions heavy_region = options(80, "region"), heavy_full = options(80, "full");
  for (TransformOptions* o : {&heavy_region, &heavy_full}) {
    o->rotation_degrees = 10;
    o->brightness = 0.3f;
  }
  EXPECT_EQ(build(source, heavy_region, 2).pixels, build(source, heavy_full, 2).pixels);
  // Several epochs: other crops, other flips.
  for (std::uint32_t epoch : {0u, 1u, 7u}) {
    EXPECT_EQ(build(source, options(80, "region"), 2, epoch).pixels,
              build(source, options(80, "full"), 2, epoch).pixels);
  }
}

// Mean and largest |a - b| over two pixel batches.
std::pair<double, int> difference(const std::vector<std::byte>& a,
                                  const std::vector<std::byte>& b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  int largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
    sum += d;
    largest = std::max(largest, d);
  }
  return {sum / static_cast<double>(a.size()), largest};
}

TEST(RegionDecode, AtReducedScalesTheBatchIsCloseToTheFullDecode) {
  // 300-480 px smooth images cropped to 32 px: the regions decode at reduced scales, where
  // the scaled IDCT averages pixels that the full decode's bilinear resize (no antialiasing)
  // samples. On smooth images that differs little; a crop misplaced by one scaled pixel
  // would differ by tens. Tolerance: mean |difference| <= 1.5 of 255 (measured 0.62 for
  // training, 0.82 for evaluation), largest <= 12 (measured 5). Fine detail differs more
  // (measured mean 4.4 with +-25 stripes 31 px apart): there the full decode aliases.
  const ImageSource source(12, 300, 480, 0, 0.0);
  const TransformOptions o = options(32, "region");
  const SampleTransform transform(o, source.info().shape);
  int reduced = 0;
  for (std::uint32_t i = 0; i < source.size(); ++i) {
    Bytes bytes;
    source.read(i, bytes);
    JpegRegionDecoder decoder;
    const PixelWindow whole = decoder.read_header(bytes, "x");
    const augment::Box box = transform.train_crop(whole.width, whole.height, 17, 3, i);
    reduced += region_scale(box.height, box.width, 32, 32) < 8;
  }
  EXPECT_EQ(reduced, static_cast<int>(source.size()));
  const Batches region = build(source, o, 3);
  const Batches full = build(source, options(32, "full"), 3);
  EXPECT_NE(region.pixels, full.pixels);  // the reduced scales were used
  const auto [mean, largest] = difference(region.pixels, full.pixels);
  RecordProperty("mean_abs_difference", std::to_string(mean));
  RecordProperty("max_abs_difference", largest);
  EXPECT_LE(mean, 1.5);
  EXPECT_LE(largest, 12);
  double eval_sum = 0;
  for (std::size_t i = 0; i < region.eval.size(); ++i)
    eval_sum += std::abs(region.eval[i] - full.eval[i]) * 0.25f * 255;  // back to pixel units
  EXPECT_LE(eval_sum / static_cast<double>(region.eval.size()), 1.5);
}

TEST(RegionDecode, ASamplesPixelsDoNotDependOnTheBuilderItsThreadsOrItsPlaceInTheBatch) {
  // What a data-service worker and a trainer both do: build batches with BatchBuilder, with
  // their own thread counts and batch compositions, bytes read ahead or read on the spot.
  const ImageSource source(10, 200, 360);
  const TransformOptions o = options(48, "region");
  const SampleTransform transform(o, source.info().shape);
  BatchBuilder one(source, transform, 1), three(source, transform, 3);
  const std::size_t stride = one.bytes_per_sample();
  const std::vector<std::uint32_t> forward{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::uint32_t> shuffled{7, 2, 9, 0, 5};
  std::vector<std::byte> a(forward.size() * stride), b(shuffled.size() * stride);
  std::vector<model::Label> la(forward.size()), lb(shuffled.size());
  one.build_train_encoded(forward, 5, 2, a.data(), la.data());
  std::vector<Bytes> fetched(shuffled.size());
  for (std::size_t i = 0; i < shuffled.size(); ++i) source.read(shuffled[i], fetched[i]);
  three.build_train_encoded(shuffled, 5, 2, b.data(), lb.data(), fetched);
  for (std::size_t i = 0; i < shuffled.size(); ++i) {
    const auto* x = a.data() + shuffled[i] * stride;
    const auto* y = b.data() + i * stride;
    EXPECT_TRUE(std::equal(x, x + stride, y)) << "sample " << shuffled[i];
  }
}

TEST(RegionDecode, PngsKeepTheFullDecode) {
  const ImageSource source(8, 300, 400, 1);  // PNGs only
  EXPECT_EQ(build(source, options(32, "region"), 2).pixels,
            build(source, options(32, "full"), 2).pixels);
}

TEST(RegionDecode, ATruncatedJpegIsSkippedWhateverTheCrop) {
  // The crop may lie in the intact first half of the data: the sample is skipped anyway,
  // in every epoch, as the full decode skips it.
  ImageSource source(6, 200, 260);
  source.truncate(2);
  const SampleTransform transform(options(32, "region"), source.info().shape);
  BatchBuilder builder(source, transform, 2, {.channels = 3, .skip_corrupt = true});
  const std::vector<std::uint32_t> samples = all(source);
  for (std::uint32_t epoch = 0; epoch < 6; ++epoch) {
    model::Tensor images;
    std::vector<model::Label> labels;
    builder.build_train(samples, 1, epoch, images, labels);
    EXPECT_EQ(labels[2], model::kSkippedLabel) << "epoch " << epoch;
    EXPECT_NE(labels[1], model::kSkippedLabel);
  }
  EXPECT_EQ(builder.skipped(), 6u);
}

}  // namespace
}  // namespace conflux::data
