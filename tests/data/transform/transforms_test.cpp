#include "conflux/data/transform/transforms.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "../../support/synthetic_dataset.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/data/transform/augment_ops.hpp"

namespace conflux::data {
namespace {

TEST(Transforms, NormaliseOnlyMapsPixelsExactly) {
  const SampleTransform t({0, 0, false, {0.5f}, {0.25f}}, {1, 2, 2});
  const std::uint8_t img[4] = {0, 255, 51, 102};
  float out[4];
  t.eval({{1, 2, 2}, img}, out);
  EXPECT_FLOAT_EQ(out[0], -2.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f);
  EXPECT_NEAR(out[2], (0.2f - 0.5f) / 0.25f, 1e-6);
  t.train({{1, 2, 2}, img}, 1, 0, 0, out);  // no random parts configured: same as eval
  EXPECT_FLOAT_EQ(out[1], 2.0f);
}

TEST(Transforms, PaddedCropIsAShiftedWindowWithZeroPadding) {
  // 1x4x4 image, pad 2, crop 4: each output is the input shifted by (dy, dx) in [-2, 2].
  const ImageShape shape{1, 4, 4};
  std::uint8_t img[16];
  for (int i = 0; i < 16; ++i) img[i] = static_cast<std::uint8_t>(i + 1);
  const SampleTransform t({2, 4, false, {0.0f}, {1.0f / 255.0f}}, shape);  // out = pixel value
  std::set<std::pair<int, int>> shifts;
  for (std::uint64_t s = 0; s < 200; ++s) {
    float out[16];
    t.train({shape, img}, 3, 0, s, out);
    bool matched = false;
    for (int dy = -2; dy <= 2 && !matched; ++dy) {
      for (int dx = -2; dx <= 2 && !matched; ++dx) {
        bool ok = true;
        for (int y = 0; y < 4 && ok; ++y)
          for (int x = 0; x < 4 && ok; ++x) {
            const int sy = y + dy, sx = x + dx;
            const float want = (sy < 0 || sy > 3 || sx < 0 || sx > 3) ? 0.0f : img[sy * 4 + sx];
            ok = out[y * 4 + x] == want;
          }
        if (ok) {
          matched = true;
          shifts.insert({dy, dx});
        }
      }
    }
    ASSERT_TRUE(matched) << "sample " << s;
  }
  EXPECT_EQ(shifts.size(), 25u);  // all 5x5 offsets occur
}

TEST(Transforms, FlipMirrorsRows) {
  const ImageShape shape{1, 1, 4};
  const std::uint8_t img[4] = {1, 2, 3, 4};
  const SampleTransform t({0, 0, true, {0.0f}, {1.0f / 255.0f}}, shape);
  int flipped = 0;
  for (std::uint64_t s = 0; s < 100; ++s) {
    float out[4];
    t.train({shape, img}, 1, 0, s, out);
    if (out[0] == 4.0f) {
      ++flipped;
      EXPECT_EQ(out[3], 1.0f);
    } else {
      EXPECT_EQ(out[0], 1.0f);
    }
  }
  EXPECT_GT(flipped, 30);
  EXPECT_LT(flipped, 70);
}

TEST(Transforms, OutputDependsOnlyOnSeedEpochSample) {
  const InMemorySplit d = testing::synthetic_dataset(64, {3, 8, 8});
  const SampleTransform t({2, 8, true, {0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.4f}}, d.shape);
  std::vector<std::uint32_t> order(64);
  for (std::uint32_t i = 0; i < 64; ++i) order[i] = 63 - i;
  model::Tensor one, many, again;
  std::vector<model::Label> l1, l4;
  const InMemorySource source(d);
  BatchBuilder single(source, t, 1), pooled(source, t, 4);
  single.build_train(order, 11, 2, one, l1);
  pooled.build_train(order, 11, 2, many, l4);
  ASSERT_EQ(one.size(), many.size());
  EXPECT_EQ(std::memcmp(one.data.data(), many.data.data(), one.size() * sizeof(float)), 0);
  EXPECT_EQ(l1, l4);
  // A batch built in another order holds the same per-sample bytes.
  std::vector<std::uint32_t> reversed(order.rbegin(), order.rend());
  pooled.build_train(reversed, 11, 2, again, l4);
  const std::size_t stride = t.output_shape().size();
  for (std::size_t i = 0; i < 64; ++i) {
    ASSERT_EQ(std::memcmp(one.data.data() + i * stride, again.data.data() + (63 - i) * stride,
                          stride * sizeof(float)),
              0);
  }
  // Another epoch draws other augmentations.
  pooled.build_train(order, 11, 3, again, l4);
  EXPECT_NE(std::memcmp(one.data.data(), again.data.data(), one.size() * sizeof(float)), 0);
}

TEST(Transforms, RejectsOptionsThatDoNotFitTheImage) {
  EXPECT_THROW(SampleTransform({0, 40, false, {0.f}, {1.f}}, {1, 28, 28}), InputError);
  EXPECT_THROW(SampleTransform({2, 0, false, {0.f}, {1.f}}, {1, 28, 28}), InputError);
  EXPECT_THROW(SampleTransform({0, 0, false, {0.f, 0.f}, {1.f}}, {3, 8, 8}), InputError);
}

// ---- Heavy augmentations -------------------------------------------------------------------

// Options whose output is in pixel units (mean 0, std 1/255): out == the float pixel value.
TransformOptions pixel_units(int channels = 1) {
  TransformOptions o;
  o.mean.assign(static_cast<std::size_t>(channels), 0.0f);
  o.std.assign(static_cast<std::size_t>(channels), 1.0f / 255.0f);
  return o;
}

std::vector<float> train_sample(const SampleTransform& t, ImageView img, std::uint64_t seed,
                                std::uint32_t epoch, std::uint64_t sample) {
  std::vector<float> out(t.output_shape().size());
  t.train(img, seed, epoch, sample, out.data());
  return out;
}

std::vector<float> eval_sample(const SampleTransform& t, ImageView img) {
  std::vector<float> out(t.output_shape().size());
  t.eval(img, out.data());
  return out;
}

// Every heavy op at once, for the determinism tests.
TransformOptions all_heavy_ops() {
  TransformOptions o;
  o.hflip = true;
  o.mean = {0.4f, 0.5f, 0.6f};
  o.std = {0.2f, 0.3f, 0.4f};
  o.resized_crop = 12;
  o.rotation_degrees = 20;
  o.brightness = o.contrast = o.saturation = 0.4f;
  o.blur_kernel = 3;
  o.blur_probability = 0.5f;
  o.cutout_size = 4;
  return o;
}

TEST(Transforms, LegacyPathIsBitIdenticalToTheReleasedOne) {
  // Digest of the pre-heavy implementation's output (same inputs), so any change in the light
  // path's arithmetic or Rng draws fails here (the MNIST demo digest depends on it).
  const ImageShape shape{3, 8, 8};
  std::vector<std::uint8_t> img(16 * shape.size());
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = static_cast<std::uint8_t>(i * 37 + 11);
  const SampleTransform t({2, 6, true, {0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.4f}}, shape);
  const std::size_t n = t.output_shape().size();
  std::vector<float> out(17 * n);
  for (std::size_t s = 0; s < 16; ++s)
    t.train({shape, std::span(img.data() + s * shape.size(), shape.size())}, 7, 1, s,
            out.data() + s * n);
  t.eval({shape, std::span(img.data(), shape.size())}, out.data() + 16 * n);
  EXPECT_EQ(sha256_hex(std::as_bytes(std::span(out))),
            "4e9cda900fac88dc56d86d06b73e6d0e6a9dbfb65c71e2f2e9364eb5245966e8");
}

TEST(TransformsHeavy, OutputIsAPureFunctionOfSeedEpochSample) {
  const InMemorySplit d = testing::synthetic_dataset(4, {3, 16, 16});
  const SampleTransform t(all_heavy_ops(), d.shape);
  ASSERT_EQ(t.output_shape(), (ImageShape{3, 12, 12}));
  const auto first = train_sample(t, {d.shape, d.image(0)}, 5, 1, 0);
  (void)train_sample(t, {d.shape, d.image(1)}, 9, 4, 3);  // reuses the thread's scratch in between
  EXPECT_EQ(train_sample(t, {d.shape, d.image(0)}, 5, 1, 0), first);
  EXPECT_NE(train_sample(t, {d.shape, d.image(0)}, 5, 1, 1),
            first);  // same pixels, other sample index
  EXPECT_NE(train_sample(t, {d.shape, d.image(0)}, 5, 2, 0), first);
  EXPECT_NE(train_sample(t, {d.shape, d.image(0)}, 6, 1, 0), first);
}

TEST(TransformsHeavy, OneThreadAndThreeThreadsBuildTheSameBatch) {
  const InMemorySplit d = testing::synthetic_dataset(48, {3, 16, 16});
  const SampleTransform t(all_heavy_ops(), d.shape);
  std::vector<std::uint32_t> order(48);
  for (std::uint32_t i = 0; i < 48; ++i) order[i] = (i * 7) % 48;
  model::Tensor one, three;
  std::vector<model::Label> l1, l3;
  const InMemorySource source(d);
  BatchBuilder single(source, t, 1), pooled(source, t, 3);
  single.build_train(order, 21, 5, one, l1);
  pooled.build_train(order, 21, 5, three, l3);
  ASSERT_EQ(one.size(), three.size());
  EXPECT_EQ(std::memcmp(one.data.data(), three.data.data(), one.size() * sizeof(float)), 0);
  EXPECT_EQ(l1, l3);
}

TEST(TransformsHeavy, EnablingAnOpLeavesTheOtherOpsDrawsAlone) {
  // A blur that never fires still draws from its generator; with a shared stream that would
  // move the crop, flip and cutout draws.
  const InMemorySplit d = testing::synthetic_dataset(1, {3, 8, 8});
  TransformOptions a = all_heavy_ops();
  a.resized_crop = 0;
  a.pad = 2;
  a.crop = 8;
  a.rotation_degrees = a.brightness = a.contrast = a.saturation = 0;
  a.blur_kernel = 0;
  TransformOptions b = a;
  b.blur_kernel = 5;
  b.blur_probability = 0;
  const SampleTransform ta(a, d.shape), tb(b, d.shape);
  for (std::uint64_t s = 0; s < 20; ++s)
    EXPECT_EQ(train_sample(ta, {d.shape, d.image(0)}, 3, 0, s),
              train_sample(tb, {d.shape, d.image(0)}, 3, 0, s));
}

TEST(TransformsHeavy, CropAndFlipAreShiftedMirroredWindows) {
  const ImageShape shape{1, 4, 4};
  std::uint8_t img[16];
  for (int i = 0; i < 16; ++i) img[i] = static_cast<std::uint8_t>(i + 1);
  TransformOptions o = pixel_units();
  o.pad = 1;
  o.crop = 4;
  o.hflip = true;
  o.cutout_size = 1;
  o.cutout_probability = 0;  // heavy path, but nothing beyond crop and flip changes pixels
  const SampleTransform t(o, shape);
  std::set<std::tuple<int, int, bool>> seen;
  for (std::uint64_t s = 0; s < 300; ++s) {
    const auto out = train_sample(t, {shape, img}, 3, 0, s);
    bool matched = false;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        for (bool flip : {false, true}) {
          bool ok = true;
          for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) {
              const int sy = y + dy, sx = (flip ? 3 - x : x) + dx;
              const float want = (sy < 0 || sy > 3 || sx < 0 || sx > 3) ? 0.0f : img[sy * 4 + sx];
              ok = ok && out[y * 4 + x] == want;
            }
          if (ok && !matched) {
            matched = true;
            seen.insert({dy, dx, flip});
          }
        }
    ASSERT_TRUE(matched) << "sample " << s;
  }
  EXPECT_EQ(seen.size(), 18u);  // 3x3 offsets, each flipped and not
}

TEST(TransformsHeavy, FullScaleSquareResizedCropIsPlainNormalise) {
  const InMemorySplit d = testing::synthetic_dataset(1, {3, 8, 8});
  TransformOptions plain{0, 0, false, {0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.4f}};
  TransformOptions rrc = plain;
  rrc.resized_crop = 8;
  rrc.resized_crop_scale_min = rrc.resized_crop_scale_max = 1.0f;
  rrc.resized_crop_ratio_min = rrc.resized_crop_ratio_max = 1.0f;
  const SampleTransform tp(plain, d.shape), tr(rrc, d.shape);
  const auto want = eval_sample(tp, {d.shape, d.image(0)});
  for (std::uint64_t s = 0; s < 5; ++s)
    EXPECT_EQ(train_sample(tr, {d.shape, d.image(0)}, 1, 0, s), want);
  EXPECT_EQ(eval_sample(tr, {d.shape, d.image(0)}), want);  // eval resizes the whole image: 8 -> 8
}

TEST(TransformsHeavy, ResizedCropBoxFollowsTorchvision) {
  for (std::uint64_t s = 0; s < 500; ++s) {
    Rng rng{1, s};
    const augment::Box b =
        augment::random_resized_crop_box(20, 30, 0.08f, 1.0f, 0.75f, 4 / 3.f, rng);
    ASSERT_GE(b.top, 0);
    ASSERT_GE(b.left, 0);
    ASSERT_GT(b.height, 0);
    ASSERT_GT(b.width, 0);
    ASSERT_LE(b.top + b.height, 20);
    ASSERT_LE(b.left + b.width, 30);
    ASSERT_GE(b.height * b.width, static_cast<int>(0.08 * 600 * 0.8));  // rounding slack
  }
  // No window of ratio 10 and half the area fits 8x8: centre fallback clamped to the ratio.
  Rng rng{2};
  EXPECT_EQ(augment::random_resized_crop_box(8, 8, 0.5f, 1.0f, 10.0f, 10.0f, rng),
            (augment::Box{3, 0, 1, 8}));
}

TEST(TransformsHeavy, BilinearResizeUsesHalfPixelCentres) {
  // 1x1x2 row {0, 100} upsampled to 4: PyTorch gives 0, 25, 75, 100 (align_corners = false).
  const std::uint8_t row[2] = {0, 100};
  float out[4];
  augment::resize_bilinear(row, {1, 1, 2}, {0, 0, 1, 2}, 1, 4, false, out);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 25.0f);
  EXPECT_FLOAT_EQ(out[2], 75.0f);
  EXPECT_FLOAT_EQ(out[3], 100.0f);
  augment::resize_bilinear(row, {1, 1, 2}, {0, 0, 1, 2}, 1, 4, true, out);
  EXPECT_FLOAT_EQ(out[0], 100.0f);
  EXPECT_FLOAT_EQ(out[1], 75.0f);
}

TEST(TransformsHeavy, RotationByZeroIsIdentityAndQuarterTurnsPermute) {
  const ImageShape shape{2, 5, 5};
  std::vector<float> src(shape.size()), dst(shape.size());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i * 3 + 1);
  augment::rotate(src.data(), shape, 0.0f, dst.data());
  EXPECT_EQ(dst, src);
  const auto at = [&](const std::vector<float>& v, int c, int y, int x) {
    return v[static_cast<std::size_t>((c * 5 + y) * 5 + x)];
  };
  augment::rotate(src.data(), shape, 90.0f, dst.data());  // counter-clockwise
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 5; ++x) EXPECT_NEAR(at(dst, c, y, x), at(src, c, x, 4 - y), 1e-3);
  augment::rotate(src.data(), shape, 180.0f, dst.data());
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 5; ++x) EXPECT_NEAR(at(dst, c, y, x), at(src, c, 4 - y, 4 - x), 1e-3);
}

TEST(TransformsHeavy, RotationKeepsTheCentreAndFillsCornersWithZero) {
  const ImageShape shape{1, 9, 9};
  const std::vector<std::uint8_t> img(shape.size(), 200);
  TransformOptions o = pixel_units();
  o.rotation_degrees = 45;
  const SampleTransform t(o, shape);
  int corners_cleared = 0;
  for (std::uint64_t s = 0; s < 50; ++s) {
    const auto out = train_sample(t, {shape, img}, 4, 0, s);
    EXPECT_EQ(out[4 * 9 + 4], 200.0f);
    for (int y = 2; y <= 6; ++y)  // inside the inscribed circle for every angle
      for (int x = 2; x <= 6; ++x) EXPECT_NEAR(out[y * 9 + x], 200.0f, 1e-3);
    if (out[0] < 100.0f) ++corners_cleared;
  }
  EXPECT_GT(corners_cleared, 10);
}

TEST(TransformsHeavy, BrightnessScalesAndClamps) {
  const ImageShape shape{3, 2, 2};
  std::vector<float> img(shape.size(), 100.0f);
  augment::adjust_brightness(img.data(), shape, 1.5f);
  EXPECT_EQ(img, std::vector<float>(shape.size(), 150.0f));
  augment::adjust_brightness(img.data(), shape, 3.0f);
  EXPECT_EQ(img, std::vector<float>(shape.size(), 255.0f));
  // Through the pipeline: a constant image stays constant, scaled by one factor in [0.5, 1.5].
  TransformOptions o = pixel_units(3);
  o.brightness = 0.5f;
  const SampleTransform t(o, {3, 4, 4});
  const std::vector<std::uint8_t> grey(48, 100);
  std::set<float> factors;
  for (std::uint64_t s = 0; s < 20; ++s) {
    const auto out = train_sample(t, {{3, 4, 4}, grey}, 1, 0, s);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [&](float v) { return v == out[0]; }));
    EXPECT_GE(out[0], 50.0f);
    EXPECT_LE(out[0], 150.0f);
    factors.insert(out[0]);
  }
  EXPECT_GT(factors.size(), 10u);
}

TEST(TransformsHeavy, ContrastBlendsWithTheMeanGrey) {
  const ImageShape shape{1, 1, 4};
  std::vector<float> img = {0, 200, 0, 200};  // mean 100
  augment::adjust_contrast(img.data(), shape, 0.5f);
  EXPECT_EQ(img, (std::vector<float>{50, 150, 50, 150}));
  augment::adjust_contrast(img.data(), shape, 0.0f);
  EXPECT_EQ(img, (std::vector<float>{100, 100, 100, 100}));
  std::vector<float> high = {0, 200};
  augment::adjust_contrast(high.data(), {1, 1, 2}, 3.0f);  // -200 and 400 clamp
  EXPECT_EQ(high, (std::vector<float>{0, 255}));
  // For RGB the mean is of the luma: a pure red image has mean grey 0.299 * 200.
  std::vector<float> red = {200, 0, 0};
  augment::adjust_contrast(red.data(), {3, 1, 1}, 0.0f);
  for (float v : red) EXPECT_NEAR(v, 0.299f * 200, 1e-3);
}

TEST(TransformsHeavy, SaturationLeavesGreyAloneAndZeroMakesGrey) {
  const ImageShape shape{3, 2, 2};
  std::vector<float> grey = {10, 60, 120, 250, 10, 60, 120, 250, 10, 60, 120, 250};
  for (float f : {0.0f, 0.3f, 1.7f}) {
    std::vector<float> img = grey;
    augment::adjust_saturation(img.data(), shape, f);
    for (std::size_t i = 0; i < img.size(); ++i) EXPECT_NEAR(img[i], grey[i], 1e-3) << f;
  }
  std::vector<float> colour = {255, 0, 0, 0, 0, 255, 0, 0, 0, 0, 255, 0};
  augment::adjust_saturation(colour.data(), shape, 0.0f);
  const float lumas[4] = {0.299f * 255, 0.587f * 255, 0.114f * 255, 0.0f};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(colour[c * 4 + i], lumas[i], 1e-3);
  // One channel: saturation is ignored, so the output equals the same pipeline without it.
  TransformOptions a = pixel_units();
  a.cutout_size = 2;
  TransformOptions b = a;
  b.saturation = 0.9f;
  const InMemorySplit d = testing::synthetic_dataset(1, {1, 6, 6});
  const SampleTransform ta(a, d.shape), tb(b, d.shape);
  for (std::uint64_t s = 0; s < 5; ++s)
    EXPECT_EQ(train_sample(ta, {d.shape, d.image(0)}, 1, 0, s),
              train_sample(tb, {d.shape, d.image(0)}, 1, 0, s));
}

TEST(TransformsHeavy, BlurKeepsConstantsAndSpreadsAnImpulse) {
  std::vector<float> weights(5);
  augment::gaussian_kernel(5, 1.0f, weights.data());
  EXPECT_NEAR(weights[0] + weights[1] + weights[2] + weights[3] + weights[4], 1.0f, 1e-6);
  EXPECT_FLOAT_EQ(weights[0], weights[4]);
  EXPECT_NEAR(weights[1] / weights[2], std::exp(-0.5f), 1e-6);

  const ImageShape shape{2, 11, 11};
  std::vector<float> flat(shape.size(), 77.0f);
  augment::gaussian_blur(flat.data(), shape, 5, 1.3f);
  for (float v : flat) EXPECT_NEAR(v, 77.0f, 1e-3);

  std::vector<float> impulse(shape.size(), 0.0f);
  impulse[5 * 11 + 5] = 1000.0f;  // channel 0, centre: farther than the radius from any edge
  augment::gaussian_blur(impulse.data(), shape, 5, 1.0f);
  double sum = 0;
  for (int i = 0; i < 121; ++i) sum += impulse[i];
  EXPECT_NEAR(sum, 1000.0, 1e-2);
  for (int dy = -2; dy <= 2; ++dy)  // separable: the image is the outer product of the kernel
    for (int dx = -2; dx <= 2; ++dx)
      EXPECT_NEAR(impulse[(5 + dy) * 11 + 5 + dx], 1000.0f * weights[dy + 2] * weights[dx + 2],
                  1e-3);
  EXPECT_EQ(impulse[2 * 11 + 5], 0.0f);                         // outside the 5x5 support
  for (int i = 121; i < 242; ++i) EXPECT_EQ(impulse[i], 0.0f);  // channels stay apart
}

TEST(TransformsHeavy, BlurReflectsAtTheBorder) {
  // Reflect (torchvision): index -1 reads index 1, so an edge impulse keeps only the centre
  // weight at the edge (clamp-to-edge would add a side weight there).
  std::vector<float> w(3);
  augment::gaussian_kernel(3, 0.8f, w.data());
  std::vector<float> row = {1, 0, 0, 0, 0};
  augment::gaussian_blur(row.data(), {1, 1, 5}, 3, 0.8f);
  EXPECT_NEAR(row[0], w[1], 1e-6);
  EXPECT_NEAR(row[1], w[0], 1e-6);
  EXPECT_EQ(row[2], 0.0f);
}

TEST(TransformsHeavy, BlurProbabilityGatesTheBlur) {
  const InMemorySplit d = testing::synthetic_dataset(1, {3, 8, 8});
  TransformOptions never = pixel_units(3);
  never.blur_kernel = 3;
  never.blur_probability = 0;
  TransformOptions always = never;
  always.blur_probability = 1;
  TransformOptions off = pixel_units(3);
  off.cutout_size = 1;
  off.cutout_probability = 0;
  const SampleTransform tn(never, d.shape), ta(always, d.shape), to(off, d.shape);
  for (std::uint64_t s = 0; s < 5; ++s) {
    const auto plain = train_sample(to, {d.shape, d.image(0)}, 1, 0, s);
    EXPECT_EQ(train_sample(tn, {d.shape, d.image(0)}, 1, 0, s), plain);
    EXPECT_NE(train_sample(ta, {d.shape, d.image(0)}, 1, 0, s), plain);
  }
}

TEST(TransformsHeavy, CutoutZeroesASquareClippedAtTheBorder) {
  const ImageShape shape{2, 6, 6};
  std::vector<float> img(shape.size(), 1.0f);
  augment::cutout(img.data(), shape, 3, 2, 3);  // rows 2..4, columns 1..3
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 6; ++x) {
        const bool inside = y >= 2 && y <= 4 && x >= 1 && x <= 3;
        EXPECT_EQ(img[(c * 6 + y) * 6 + x], inside ? 0.0f : 1.0f) << c << y << x;
      }
  std::fill(img.begin(), img.end(), 1.0f);
  augment::cutout(img.data(), shape, 0, 0, 4);  // rows and columns -2..1: a 2x2 corner
  EXPECT_EQ(std::count(img.begin(), img.end(), 0.0f), 2 * 4);

  // Pipeline: mean -1 keeps every normalised value >= 1, so zeros are exactly the cutout.
  TransformOptions o{0, 0, false, {-1.0f}, {1.0f}};
  o.cutout_size = 3;
  const SampleTransform t(o, {1, 8, 8});
  const std::vector<std::uint8_t> pixels(64, 9);
  int full = 0;
  for (std::uint64_t s = 0; s < 100; ++s) {
    const auto out = train_sample(t, {{1, 8, 8}, pixels}, 2, 0, s);
    const auto zeros = std::count(out.begin(), out.end(), 0.0f);
    EXPECT_GE(zeros, 4);  // a 3x3 square clipped to a corner keeps 2x2
    EXPECT_LE(zeros, 9);
    if (zeros == 9) ++full;
  }
  EXPECT_GT(full, 30);  // centres 1..6 of 0..7 on both axes: ~56% fully inside
  o.cutout_probability = 0;
  const SampleTransform never(o, {1, 8, 8});
  const auto out = train_sample(never, {{1, 8, 8}, pixels}, 2, 0, 0);
  EXPECT_EQ(std::count(out.begin(), out.end(), 0.0f), 0);
}

TEST(TransformsHeavy, EvalAppliesNoRandomOp) {
  const InMemorySplit d = testing::synthetic_dataset(1, {3, 16, 16});
  TransformOptions heavy = all_heavy_ops();
  heavy.resized_crop = 0;
  heavy.pad = 2;
  heavy.crop = 12;
  TransformOptions light{2, 12, false, heavy.mean, heavy.std};
  const SampleTransform th(heavy, d.shape), tl(light, d.shape);
  EXPECT_EQ(eval_sample(th, {d.shape, d.image(0)}), eval_sample(tl, {d.shape, d.image(0)}));
  // With resized_crop, eval is the whole image resized: a 16x16 ramp to 8x8 averages 2x2
  // blocks (half-pixel centres fall between source pixels), rounded to a pixel value (x.5 up).
  TransformOptions rrc = pixel_units();
  rrc.resized_crop = 8;
  const InMemorySplit g = testing::synthetic_dataset(1, {1, 16, 16});
  const SampleTransform tr(rrc, g.shape);
  const auto out = eval_sample(tr, {g.shape, g.image(0)});
  ASSERT_EQ(out.size(), 64u);
  const auto px = [&](int y, int x) { return static_cast<float>(g.images[y * 16 + x]); };
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      const float want = (px(2 * y, 2 * x) + px(2 * y, 2 * x + 1) + px(2 * y + 1, 2 * x) +
                          px(2 * y + 1, 2 * x + 1)) /
                         4;
      EXPECT_NEAR(out[y * 8 + x], std::floor(want + 0.5f), 1e-3);
    }
}

TEST(TransformsHeavy, RejectsOutOfRangeOptions) {
  const ImageShape shape{3, 8, 8};
  const auto rejects = [&](const std::function<void(TransformOptions&)>& edit,
                           const std::string& key) {
    TransformOptions o = pixel_units(3);
    edit(o);
    try {
      SampleTransform t(o, shape);
      ADD_FAILURE() << "accepted a bad transform." << key;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("transform." + key), std::string::npos) << e.what();
    }
  };
  rejects([](auto& o) { o.resized_crop = 8, o.crop = 8; }, "resized_crop");
  rejects([](auto& o) { o.resized_crop = 8, o.pad = 2; }, "resized_crop");
  rejects([](auto& o) { o.resized_crop = -1; }, "resized_crop");
  rejects([](auto& o) { o.resized_crop_scale_min = 0; }, "resized_crop_scale_min");
  rejects([](auto& o) { o.resized_crop_scale_max = 1.5f; }, "resized_crop_scale_max");
  rejects([](auto& o) { o.resized_crop_scale_min = 0.9f, o.resized_crop_scale_max = 0.5f; },
          "resized_crop_scale_min");
  rejects([](auto& o) { o.resized_crop_ratio_min = 0; }, "resized_crop_ratio_min");
  rejects([](auto& o) { o.resized_crop_ratio_min = 2, o.resized_crop_ratio_max = 1; },
          "resized_crop_ratio_max");
  rejects([](auto& o) { o.rotation_degrees = 181; }, "rotation_degrees");
  rejects([](auto& o) { o.rotation_degrees = -1; }, "rotation_degrees");
  rejects([](auto& o) { o.brightness = -0.1f; }, "brightness");
  rejects([](auto& o) { o.contrast = NAN; }, "contrast");
  rejects([](auto& o) { o.saturation = -1; }, "saturation");
  rejects([](auto& o) { o.blur_kernel = 4; }, "blur_kernel");
  rejects([](auto& o) { o.blur_kernel = -3; }, "blur_kernel");
  rejects([](auto& o) { o.blur_sigma_min = 0; }, "blur_sigma_min");
  rejects([](auto& o) { o.blur_sigma_min = 3, o.blur_sigma_max = 2; }, "blur_sigma_max");
  rejects([](auto& o) { o.blur_probability = 1.1f; }, "blur_probability");
  rejects([](auto& o) { o.cutout_probability = -0.1f; }, "cutout_probability");
  rejects([](auto& o) { o.cutout_size = 9; }, "cutout_size");
  rejects([](auto& o) { o.resized_crop = 4, o.cutout_size = 5; }, "cutout_size");
  // The limits themselves are fine.
  TransformOptions ok = pixel_units(3);
  ok.rotation_degrees = 180;
  ok.cutout_size = 8;
  ok.blur_kernel = 9;  // wider than the image: reflect still defined
  ok.blur_probability = 1;
  const SampleTransform edge(ok, shape);
  const std::vector<std::uint8_t> img(shape.size(), 50);
  const auto out = train_sample(edge, {shape, img}, 1, 0, 0);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
}

}  // namespace
}  // namespace conflux::data
