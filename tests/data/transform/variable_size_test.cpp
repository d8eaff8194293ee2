// SampleTransform on images of any size ({C, 0, 0} input): the random resized crop, the
// Resize + CenterCrop evaluation, train_crop(), and the fixed-size path pinned bit for bit.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/core/thread_pool.hpp"
#include "conflux/data/transform/augment_ops.hpp"
#include "conflux/data/transform/transforms.hpp"

namespace conflux::data {
namespace {

// A bilinear value as the resize writes it: rounded to the nearest pixel value, halves up.
double pixel_value(double v) {
  return std::floor(v + 0.5);
}

// An owned image with its view.
struct Image {
  ImageShape shape;
  std::vector<std::uint8_t> pixels;
  ImageView view() const { return {shape, pixels}; }
};

// Pixels that differ per position and image, so another crop gives other values.
Image noise_image(int channels, int height, int width, std::uint64_t salt) {
  Image img{{channels, height, width}, {}};
  Rng rng{salt};
  img.pixels.resize(img.shape.size());
  for (auto& p : img.pixels) p = static_cast<std::uint8_t>(rng.below(256));
  return img;
}

// Output in pixel units: mean 0, std 1/255.
TransformOptions pixel_units(int channels, int resized_crop) {
  TransformOptions o;
  o.mean.assign(static_cast<std::size_t>(channels), 0.0f);
  o.std.assign(static_cast<std::size_t>(channels), 1.0f / 255.0f);
  o.resized_crop = resized_crop;
  return o;
}

std::vector<float> train(const SampleTransform& t, const Image& img, std::uint64_t seed,
                         std::uint32_t epoch, std::uint64_t sample) {
  std::vector<float> out(t.output_shape().size());
  t.train(img.view(), seed, epoch, sample, out.data());
  return out;
}

std::vector<float> eval(const SampleTransform& t, const Image& img) {
  std::vector<float> out(t.output_shape().size());
  t.eval(img.view(), out.data());
  return out;
}

TEST(TransformsAnySize, TrainOutputHasTheCropShapeAndIsAPureFunctionOfTheKey) {
  TransformOptions o = pixel_units(3, 48);
  o.hflip = true;
  const SampleTransform t(o, {3, 0, 0});
  EXPECT_TRUE(t.variable_input());
  EXPECT_EQ(t.output_shape(), (ImageShape{3, 48, 48}));
  const Image img = noise_image(3, 120, 90, 1);
  const auto first = train(t, img, 5, 1, 0);
  ASSERT_EQ(first.size(), 3u * 48 * 48);
  (void)train(t, noise_image(3, 333, 41, 2), 9, 4, 3);  // another size on the same scratch
  EXPECT_EQ(train(t, img, 5, 1, 0), first);
  EXPECT_NE(train(t, img, 5, 1, 1), first);  // same pixels, other sample index
  EXPECT_NE(train(t, img, 5, 2, 0), first);
  EXPECT_NE(train(t, img, 6, 1, 0), first);
  EXPECT_NE(t.train_crop(90, 120, 5, 1, 0), t.train_crop(90, 120, 5, 1, 1));
}

TEST(TransformsAnySize, OneThreadAndThreeThreadsGiveTheSameBytes) {
  TransformOptions o = pixel_units(3, 32);
  o.hflip = true;
  o.cutout_size = 8;
  const SampleTransform t(o, {3, 0, 0});
  std::vector<Image> images;
  for (int i = 0; i < 30; ++i)
    images.push_back(noise_image(3, 20 + (i * 37) % 90, 15 + (i * 53) % 110, i));
  const std::size_t n = t.output_shape().size();
  const auto build = [&](int threads) {
    std::vector<float> out(2 * images.size() * n);
    ThreadPool pool(threads);
    pool.parallel_for(images.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        t.train(images[i].view(), 17, 3, i, out.data() + i * n);
        t.eval(images[i].view(), out.data() + (images.size() + i) * n);
      }
    });
    return out;
  };
  const auto one = build(1), three = build(3);
  EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)), 0);
}

// The train output is the bilinear resize of train_crop()'s box, mirrored or not.
void expect_output_is_resized_box(const SampleTransform& t, const Image& img, std::uint64_t s) {
  const ImageShape out = t.output_shape();
  const augment::Box box = t.train_crop(img.shape.width, img.shape.height, 3, 0, s);
  ASSERT_GT(box.height, 0);
  ASSERT_GT(box.width, 0);
  ASSERT_GE(box.top, 0);
  ASSERT_GE(box.left, 0);
  ASSERT_LE(box.top + box.height, img.shape.height);
  ASSERT_LE(box.left + box.width, img.shape.width);
  const auto got = train(t, img, 3, 0, s);
  std::vector<float> plain(out.size()), mirrored(out.size());
  augment::resize_bilinear(img.pixels, img.shape, box, out.height, out.width, false, plain.data());
  augment::resize_bilinear(img.pixels, img.shape, box, out.height, out.width, true,
                           mirrored.data());
  // pixel_units() scales by 1 / (255 * (1 / 255.f)), which is 1 up to one rounding.
  const auto near = [&](const std::vector<float>& want) {
    for (std::size_t i = 0; i < want.size(); ++i)
      if (std::abs(got[i] - want[i]) > 1e-3f) return false;
    return true;
  };
  EXPECT_TRUE(near(plain) || near(mirrored))
      << img.shape.width << "x" << img.shape.height << " sample " << s;
  const auto [lo, hi] = std::minmax_element(img.pixels.begin(), img.pixels.end());
  for (float v : got) {  // a convex combination of source pixels
    ASSERT_GE(v, static_cast<float>(*lo) - 1e-3f);
    ASSERT_LE(v, static_cast<float>(*hi) + 1e-3f);
  }
}

TEST(TransformsAnySize, CropStaysInsideExtremeAndTinyImages) {
  TransformOptions o = pixel_units(1, 24);
  o.hflip = true;
  const SampleTransform t(o, {1, 0, 0});
  // {width, height}: extreme aspect ratios (only the clamped centre fallback fits), images
  // smaller than the output (upscaled), a single pixel.
  for (const auto& [w, h] : {std::pair{1000, 50}, std::pair{50, 1000}, std::pair{10, 7},
                             std::pair{7, 10}, std::pair{1, 1}, std::pair{3, 500}}) {
    const Image img = noise_image(1, h, w, static_cast<std::uint64_t>(w * 1000 + h));
    for (std::uint64_t s = 0; s < 40; ++s) expect_output_is_resized_box(t, img, s);
  }
  // 1000 wide, 50 high: no try fits, so the centre crop clamped to ratio 4/3 (67 x 50).
  EXPECT_EQ(t.train_crop(1000, 50, 3, 0, 0), (augment::Box{0, 466, 50, 67}));
  EXPECT_EQ(t.train_crop(50, 1000, 3, 0, 0), (augment::Box{466, 0, 67, 50}));
}

TEST(TransformsAnySize, FixedInputCropIsTheTrainCropToo) {
  // A fixed-size image through the same resized crop: train_crop() names the box it used.
  const Image img = noise_image(3, 40, 56, 9);
  TransformOptions o = pixel_units(3, 24);
  o.hflip = true;
  const SampleTransform fixed(o, img.shape), any(o, {3, 0, 0});
  for (std::uint64_t s = 0; s < 20; ++s) {
    expect_output_is_resized_box(fixed, img, s);
    EXPECT_EQ(fixed.train_crop(56, 40, 3, 0, s), any.train_crop(56, 40, 3, 0, s));
    EXPECT_EQ(train(fixed, img, 3, 0, s), train(any, img, 3, 0, s));  // one implementation
  }
  // The light path's padded crop: the window clipped to the image.
  TransformOptions light = pixel_units(3, 0);
  light.pad = 4;
  light.crop = 40;
  const SampleTransform l(light, img.shape);
  std::set<int> lefts;
  for (std::uint64_t s = 0; s < 30; ++s) {
    const augment::Box b = l.train_crop(56, 40, 1, 0, s);
    EXPECT_GE(b.height, 36);
    EXPECT_GE(b.width, 36);
    const auto out = train(l, img, 1, 0, s);
    // Where the box's top-left source pixel lands in the output: past the zero padding when
    // the window was clipped on the top or left.
    const int out_y = b.top == 0 && b.height < 40 ? 40 - b.height : 0;
    const int out_x = b.left == 0 && b.width < 40 ? 40 - b.width : 0;
    EXPECT_NEAR(out[static_cast<std::size_t>(out_y) * 40 + out_x],
                img.pixels[static_cast<std::size_t>(b.top) * 56 + b.left], 1e-3);
    lefts.insert(b.left);
  }
  EXPECT_GT(lefts.size(), 5u);
}

TEST(TransformsAnySize, EvalIsResizeShorterSideThenCentreCrop) {
  // 300 wide, 200 high; channel 0 = x, channel 1 = y: bilinear reproduces a ramp exactly.
  Image img{{2, 200, 300}, std::vector<std::uint8_t>(2 * 200 * 300)};
  for (int y = 0; y < 200; ++y)
    for (int x = 0; x < 300; ++x) {
      img.pixels[static_cast<std::size_t>(y) * 300 + x] =
          static_cast<std::uint8_t>(std::min(x, 255));
      img.pixels[60000 + static_cast<std::size_t>(y) * 300 + x] = static_cast<std::uint8_t>(y);
    }
  const SampleTransform t(pixel_units(2, 224), {2, 0, 0});
  EXPECT_EQ(t.eval_short_side(), 256);  // 224 * 8 / 7
  const auto out = eval(t, img);
  const auto at = [&](int c, int y, int x) {
    return out[(static_cast<std::size_t>(c) * 224 + y) * 224 + x];
  };
  // Resized to 384 x 256 (scale 25/32 back to the source), crop at (16, 80): output (y, x)
  // reads source x = (x + 80.5) * 0.78125 - 0.5 and y = (y + 16.5) * 0.78125 - 0.5, all
  // inside columns 62..237 where channel 0 is the ramp x; each rounded to a pixel value
  // (62.390625 -> 62, 90.515625 -> 91).
  EXPECT_NEAR(at(0, 0, 0), 62.0f, 2e-4f);
  EXPECT_NEAR(at(1, 0, 0), 12.0f, 2e-4f);
  EXPECT_NEAR(at(0, 223, 223), 237.0f, 2e-4f);
  EXPECT_NEAR(at(1, 223, 223), 187.0f, 2e-4f);
  EXPECT_NEAR(at(0, 100, 7), 68.0f, 2e-4f);
  EXPECT_NEAR(at(1, 100, 7), 91.0f, 2e-4f);
  for (int y = 0; y < 224; ++y)
    for (int x = 0; x < 224; ++x) {
      ASSERT_NEAR(at(0, y, x), pixel_value((x + 80.5) * 0.78125 - 0.5), 2e-4) << y << "," << x;
      ASSERT_NEAR(at(1, y, x), pixel_value((y + 16.5) * 0.78125 - 0.5), 2e-4) << y << "," << x;
    }
  // Portrait: the same numbers with the axes swapped.
  Image tall{{2, 300, 200}, std::vector<std::uint8_t>(2 * 300 * 200)};
  for (int y = 0; y < 300; ++y)
    for (int x = 0; x < 200; ++x) {
      tall.pixels[static_cast<std::size_t>(y) * 200 + x] =
          static_cast<std::uint8_t>(std::min(y, 255));
      tall.pixels[60000 + static_cast<std::size_t>(y) * 200 + x] = static_cast<std::uint8_t>(x);
    }
  const auto portrait = eval(t, tall);
  EXPECT_NEAR(portrait[0], 62.0f, 2e-4f);
  EXPECT_NEAR(portrait[224 * 224], 12.0f, 2e-4f);
}

TEST(TransformsAnySize, EvalCropOffsetRoundsHalfToEven) {
  // Python's round() in torchvision's center_crop: 267 x 200 resizes to 341 x 256 (long side
  // truncated from 341.76), offset round(58.5) = 58; 268 x 200 gives 343, round(59.5) = 60.
  for (const auto& [width, offset, resized] :
       {std::tuple{267, 58, 341}, std::tuple{268, 60, 343}}) {
    Image img{{1, 200, width}, std::vector<std::uint8_t>(static_cast<std::size_t>(200) * width)};
    for (int y = 0; y < 200; ++y)
      for (int x = 0; x < width; ++x)
        img.pixels[static_cast<std::size_t>(y) * width + x] =
            static_cast<std::uint8_t>(std::min(x, 255));
    TransformOptions o = pixel_units(1, 224);
    o.eval_resize = 256;
    const auto out = eval(SampleTransform(o, {1, 0, 0}), img);
    const float scale = static_cast<float>(width) / static_cast<float>(resized);
    EXPECT_NEAR(out[0], pixel_value((offset + 0.5f) * scale - 0.5f), 2e-4f) << width;
    EXPECT_NEAR(out[223], pixel_value((offset + 223.5f) * scale - 0.5f), 2e-4f) << width;
  }
}

TEST(TransformsAnySize, NeedsResizedCropAndAFittingEvalResize) {
  const auto message = [](const TransformOptions& o, ImageShape input) -> std::string {
    try {
      SampleTransform t(o, input);
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(message(pixel_units(3, 0), {3, 0, 0}).find("transform.resized_crop"),
            std::string::npos);
  EXPECT_NE(message(pixel_units(3, 0), {3, 0, 0}).find("varying size"), std::string::npos);
  TransformOptions small = pixel_units(3, 224);
  small.eval_resize = 200;
  EXPECT_NE(message(small, {3, 0, 0}).find("transform.eval_resize"), std::string::npos);
  EXPECT_NE(message(pixel_units(3, 16), {3, 0, 32}), "accepted");  // one side 0
  EXPECT_NE(message(pixel_units(3, 16), {0, 0, 0}), "accepted");
  EXPECT_EQ(message(pixel_units(3, 16), {3, 0, 0}), "accepted");
  // A wrong channel count at run time is the caller's bug.
  const SampleTransform t(pixel_units(3, 16), {3, 0, 0});
  const Image grey = noise_image(1, 20, 20, 1);
  std::vector<float> out(t.output_shape().size());
  EXPECT_THROW(t.train(grey.view(), 1, 0, 0, out.data()), RuntimeError);
}

TEST(TransformsAnySize, OneChannelWorks) {
  TransformOptions o = pixel_units(1, 16);
  o.hflip = true;
  o.rotation_degrees = 10;  // a heavy op after the resized crop (the unfused path)
  const SampleTransform t(o, {1, 0, 0});
  EXPECT_EQ(t.output_shape(), (ImageShape{1, 16, 16}));
  const Image flat{{1, 40, 25}, std::vector<std::uint8_t>(1000, 77)};
  const auto e = eval(t, flat);
  for (float v : e) EXPECT_NEAR(v, 77.0f, 1e-3f);
  const auto out = train(t, flat, 1, 0, 0);
  EXPECT_NEAR(out[8 * 16 + 8], 77.0f, 1e-3f);  // rotation keeps the centre
}

TEST(TransformsAnySize, FusedNormaliseMatchesTheStepwisePath) {
  // A blur that never fires keeps the stepwise path (resize, then normalise) and changes no
  // pixel: the fused single pass must give the same bytes.
  TransformOptions fused = pixel_units(3, 40);
  fused.mean = {0.4f, 0.5f, 0.6f};
  fused.std = {0.2f, 0.3f, 0.4f};
  fused.hflip = true;
  TransformOptions stepwise = fused;
  stepwise.blur_kernel = 3;
  stepwise.blur_probability = 0;
  const SampleTransform a(fused, {3, 0, 0}), b(stepwise, {3, 0, 0});
  const Image img = noise_image(3, 77, 131, 4);
  for (std::uint64_t s = 0; s < 10; ++s) EXPECT_EQ(train(a, img, 2, 1, s), train(b, img, 2, 1, s));
}

TEST(TransformsAnySize, FixedSizeResizedCropIsPinned) {
  // Digest of the fixed-size resized crop + flip and its eval (same inputs), pinned since
  // resized images are rounded to 8-bit pixels (as PIL's): a later change must not move a bit.
  // Plain float arithmetic (no BLAS), so the digest does not depend on the CPU model.
  const ImageShape shape{3, 32, 32};
  std::vector<std::uint8_t> img(8 * shape.size());
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = static_cast<std::uint8_t>(i * 37 + 11);
  TransformOptions o;
  o.hflip = true;
  o.mean = {0.4f, 0.5f, 0.6f};
  o.std = {0.2f, 0.3f, 0.4f};
  o.resized_crop = 24;
  const SampleTransform t(o, shape);
  const std::size_t n = t.output_shape().size();
  std::vector<float> out(9 * n);
  for (std::size_t s = 0; s < 8; ++s)
    t.train({shape, std::span(img.data() + s * shape.size(), shape.size())}, 7, 1, s,
            out.data() + s * n);
  t.eval({shape, std::span(img.data(), shape.size())}, out.data() + 8 * n);
  EXPECT_EQ(sha256_hex(std::as_bytes(std::span(out))),
            "99b25668692b1c5ea0f3dc43f669afc7380a471a7bbd047043a7fb2ec9a8cdd7");
}

}  // namespace
}  // namespace conflux::data
