// The batch builder over an encoded source: decodes where the batch is built, gives the same
// floats from bytes read ahead and from bytes it reads itself, and on a corrupt sample either
// fails naming it or (data.on_corrupt = "skip") keeps the slot with a blank image and
// kSkippedLabel. Batches the data service ships as pixels normalise to the very same floats.
#include "conflux/data/pipeline/batch_builder.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../../testkit/image_encode.hpp"

namespace conflux::data {
namespace {

// Encoded images of varying sizes in memory; sample `corrupt` holds a truncated JPEG.
class EncodedSource final : public SampleSource {
 public:
  EncodedSource(std::size_t n, std::size_t corrupt) {
    info_.name = "encoded";
    info_.format = SampleFormat::kEncoded;
    info_.shape = {3, 0, 0};
    info_.num_classes = 3;
    for (std::size_t i = 0; i < n; ++i) {
      testkit::RawImage image{20 + static_cast<int>(i % 5) * 7,
                              16 + static_cast<int>(i % 3) * 9,
                              testkit::PixelKind::kRgb,
                              {}};
      for (int p = 0; p < image.width * image.height * 3; ++p) {
        image.pixels.push_back(static_cast<std::uint8_t>((p * 13 + i * 29) % 251));
      }
      files_.push_back(i % 2 ? testkit::encode_png(image) : testkit::encode_jpeg(image, 90));
    }
    files_[corrupt].resize(files_[corrupt].size() / 2);
  }
  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return files_.size(); }
  model::Label label(std::size_t i) const override { return static_cast<model::Label>(i % 3); }
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override { out = files_[i]; }
  std::string where(std::size_t i) const override { return "img/" + std::to_string(i) + ".jpg"; }
  std::size_t resident_bytes() const noexcept override { return 0; }

 private:
  SourceInfo info_;
  std::vector<std::vector<std::uint8_t>> files_;
};

TransformOptions crop_options() {
  TransformOptions o;
  o.resized_crop = 12;
  o.hflip = true;
  o.mean = {0.5f};
  o.std = {0.25f};
  return o;
}

TEST(BatchBuilder, CorruptSampleIsAnErrorNamingItByDefault) {
  const EncodedSource source(8, 4);
  const SampleTransform transform(crop_options(), source.info().shape);
  BatchBuilder builder(source, transform, 2);
  const std::vector<std::uint32_t> samples{3, 4, 5};
  model::Tensor images;
  std::vector<model::Label> labels;
  try {
    builder.build_train(samples, 1, 0, images, labels);
    FAIL() << "a truncated JPEG was accepted";
  } catch (const CorruptSampleError& e) {
    EXPECT_NE(std::string(e.what()).find("img/4.jpg"), std::string::npos) << e.what();
  }
}

TEST(BatchBuilder, SkippedSampleKeepsItsSlotWithABlankImageAndTheSkippedLabel) {
  const EncodedSource source(8, 4);
  const SampleTransform transform(crop_options(), source.info().shape);
  BatchBuilder builder(source, transform, 2, {.channels = 3, .skip_corrupt = true});
  const std::vector<std::uint32_t> samples{3, 4, 5};
  model::Tensor images;
  std::vector<model::Label> labels;
  builder.build_train(samples, 1, 0, images, labels);
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0], 0);
  EXPECT_EQ(labels[1], model::kSkippedLabel);
  EXPECT_EQ(labels[2], 2);
  // An all-zero image, normalised: (0 - mean) / std = -2 everywhere, in both encodings.
  const std::size_t stride = builder.floats_per_sample();
  for (std::size_t k = 0; k < stride; ++k) ASSERT_FLOAT_EQ(images.data[stride + k], -2.0f);
  ASSERT_EQ(builder.encoding(), ImageEncoding::kPixels);
  std::vector<std::byte> pixels(samples.size() * builder.bytes_per_sample());
  std::vector<model::Label> labels2(samples.size());
  builder.build_train_encoded(samples, 1, 0, pixels.data(), labels2.data());
  EXPECT_EQ(labels2, labels);
  for (std::size_t k = 0; k < stride; ++k) ASSERT_EQ(pixels[stride + k], std::byte{0});
  EXPECT_EQ(builder.skipped(), 2u);
}

TEST(BatchBuilder, ReadAheadBytesAndOwnReadsGiveTheSameBatch) {
  const EncodedSource source(10, 9);
  const SampleTransform transform(crop_options(), source.info().shape);
  BatchBuilder builder(source, transform, 3);
  const std::vector<std::uint32_t> samples{7, 0, 3, 8, 1};
  std::vector<std::vector<std::uint8_t>> fetched(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) source.read(samples[i], fetched[i]);
  model::Tensor own, ahead;
  std::vector<model::Label> own_labels, ahead_labels;
  builder.build_train(samples, 5, 2, own, own_labels);
  builder.build_train(samples, 5, 2, ahead, ahead_labels, fetched);
  EXPECT_EQ(own.data, ahead.data);
  EXPECT_EQ(own_labels, ahead_labels);
  EXPECT_EQ(own.shape, (std::vector<int>{5, 3, 12, 12}));
}

// build_train_encoded then normalise gives build_train's floats, bit for bit.
void expect_pixels_normalise_to_the_floats(const TransformOptions& options) {
  const EncodedSource source(9, 4);
  const SampleTransform transform(options, source.info().shape);
  BatchBuilder builder(source, transform, 2, {.channels = 3, .skip_corrupt = true});
  ASSERT_EQ(builder.encoding(), ImageEncoding::kPixels);
  ASSERT_EQ(builder.bytes_per_sample(), builder.floats_per_sample());
  const std::vector<std::uint32_t> samples{8, 4, 0, 3, 5};
  model::Tensor floats;
  std::vector<model::Label> labels, pixel_labels(samples.size());
  builder.build_train(samples, 11, 3, floats, labels);
  std::vector<std::byte> pixels(samples.size() * builder.bytes_per_sample());
  builder.build_train_encoded(samples, 11, 3, pixels.data(), pixel_labels.data());
  std::vector<float> normalised(floats.data.size());
  transform.normalise(reinterpret_cast<const std::uint8_t*>(pixels.data()), samples.size(),
                      normalised.data());
  EXPECT_EQ(normalised, floats.data);
  EXPECT_EQ(pixel_labels, labels);
}

TEST(BatchBuilder, PixelBatchesNormaliseToTheFloatBatch) {
  expect_pixels_normalise_to_the_floats(crop_options());  // resized crop + flip
  TransformOptions rgb = crop_options();
  rgb.mean = {0.485f, 0.456f, 0.406f};
  rgb.std = {0.229f, 0.224f, 0.225f};
  expect_pixels_normalise_to_the_floats(rgb);
}

TEST(BatchBuilder, TransformsWithFloatOutputShipFloats) {
  const EncodedSource source(6, 5);
  for (const auto& change : {+[](TransformOptions& o) { o.rotation_degrees = 10; },
                             +[](TransformOptions& o) { o.cutout_size = 3; },
                             +[](TransformOptions& o) { o.brightness = 0.2f; }}) {
    TransformOptions o = crop_options();
    change(o);
    const SampleTransform transform(o, source.info().shape);
    BatchBuilder builder(source, transform, 1);
    ASSERT_EQ(builder.encoding(), ImageEncoding::kFloat32);
    ASSERT_EQ(builder.bytes_per_sample(), builder.floats_per_sample() * sizeof(float));
    const std::vector<std::uint32_t> samples{2, 0};
    model::Tensor floats;
    std::vector<model::Label> labels, encoded_labels(2);
    builder.build_train(samples, 3, 1, floats, labels);
    std::vector<float> encoded(floats.data.size());
    builder.build_train_encoded(samples, 3, 1, reinterpret_cast<std::byte*>(encoded.data()),
                                encoded_labels.data());
    EXPECT_EQ(encoded, floats.data);
  }
}

// Evaluation batches as 8-bit images (a GPU trainer's test batches) normalise to build_eval's
// floats bit for bit, a skipped sample included (zeros, the blank image's pixels).
TEST(BatchBuilder, EvaluationPixelsNormaliseToTheFloatBatch) {
  const EncodedSource source(9, 4);
  const SampleTransform transform(crop_options(), source.info().shape);
  BatchBuilder builder(source, transform, 2, {.channels = 3, .skip_corrupt = true});
  model::Tensor floats;
  std::vector<model::Label> labels, pixel_labels;
  builder.build_eval(2, 9, floats, labels);
  PixelBuffer pixels;
  builder.build_eval_pixels(2, 9, pixels, pixel_labels);
  ASSERT_EQ(pixels.size(), floats.data.size());
  std::vector<float> normalised(floats.data.size());
  transform.normalise(pixels.data(), 7, normalised.data());
  EXPECT_EQ(normalised, floats.data);
  EXPECT_EQ(pixel_labels, labels);
  EXPECT_EQ(labels[2], model::kSkippedLabel);  // sample 4, truncated
}

}  // namespace
}  // namespace conflux::data
