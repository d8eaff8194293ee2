#include "conflux/data/transforms.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "conflux/core/error.hpp"
#include "conflux/data/batch_builder.hpp"

namespace conflux::data {
namespace {

Dataset ramp_dataset(std::size_t n, ImageShape shape) {
  Dataset d;
  d.name = "ramp";
  d.shape = shape;
  d.num_classes = 10;
  d.images.resize(n * shape.size());
  for (std::size_t i = 0; i < d.images.size(); ++i)
    d.images[i] = static_cast<std::uint8_t>(i * 7 + 1);
  for (std::size_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::uint8_t>(i % 10));
  return d;
}

TEST(Transforms, NormaliseOnlyMapsPixelsExactly) {
  const SampleTransform t({0, 0, false, {0.5f}, {0.25f}}, {1, 2, 2});
  const std::uint8_t img[4] = {0, 255, 51, 102};
  float out[4];
  t.eval(img, out);
  EXPECT_FLOAT_EQ(out[0], -2.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f);
  EXPECT_NEAR(out[2], (0.2f - 0.5f) / 0.25f, 1e-6);
  t.train(img, 1, 0, 0, out);  // no random parts configured: same as eval
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
    t.train(img, 3, 0, s, out);
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
    t.train(img, 1, 0, s, out);
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
  const Dataset d = ramp_dataset(64, {3, 8, 8});
  const SampleTransform t({2, 8, true, {0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.4f}}, d.shape);
  std::vector<std::uint32_t> order(64);
  for (std::uint32_t i = 0; i < 64; ++i) order[i] = 63 - i;
  model::Tensor one, many, again;
  std::vector<std::uint8_t> l1, l4;
  BatchBuilder single(d, t, 1), pooled(d, t, 4);
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

}  // namespace
}  // namespace conflux::data
