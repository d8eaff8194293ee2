// SampleTransform's checks: of the options against the input images (at construction) and of
// each image (or decoded part) handed to it. The transforms themselves are in transforms.cpp.

#include <algorithm>
#include <cmath>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/data/transform/transforms.hpp"

namespace conflux::data {

namespace {

bool is_probability(float p) {
  return p >= 0.0f && p <= 1.0f;
}  // false for NaN

// transform.eval_resize = 0: the ImageNet recipe's ratio, Resize(256) before CenterCrop(224).
int default_eval_resize(int resized_crop) {
  return static_cast<int>(std::lround(resized_crop * 8.0 / 7.0));
}

}  // namespace

void SampleTransform::validate_input(const TransformOptions& options, ImageShape input) {
  CONFLUX_REQUIRE(input.channels > 0, "images with {} channels: need at least 1", input.channels);
  variable_ = input.height == 0 && input.width == 0;
  if (!variable_) {
    CONFLUX_REQUIRE(input.height > 0 && input.width > 0,
                    "images of {}x{} pixels: height and width must both be positive, or both 0 "
                    "for images of any size",
                    input.height, input.width);
    return;
  }
  CONFLUX_REQUIRE(options.resized_crop > 0,
                  "images of varying size need transform.resized_crop (> 0, e.g. 224) to bring "
                  "them to one size; transform.resized_crop = {}",
                  options.resized_crop);
  CONFLUX_REQUIRE(options.eval_resize >= 0, "transform.eval_resize = {} must be >= 0 (0 = {})",
                  options.eval_resize, "resized_crop * 8 / 7");
  eval_resize_ =
      options.eval_resize > 0 ? options.eval_resize : default_eval_resize(options.resized_crop);
  CONFLUX_REQUIRE(eval_resize_ >= options.resized_crop,
                  "transform.eval_resize = {} is smaller than transform.resized_crop = {}: "
                  "evaluation centre-crops resized_crop pixels from the resized image",
                  eval_resize_, options.resized_crop);
}

void SampleTransform::validate_heavy() const {
  const TransformOptions& o = options_;
  // Ranges are written so that NaN fails them too.
  CONFLUX_REQUIRE(o.resized_crop_scale_min > 0 &&
                      o.resized_crop_scale_min <= o.resized_crop_scale_max &&
                      o.resized_crop_scale_max <= 1,
                  "transform.resized_crop_scale_min = {} and transform.resized_crop_scale_max = {} "
                  "must satisfy 0 < min <= max <= 1 (fractions of the image area)",
                  o.resized_crop_scale_min, o.resized_crop_scale_max);
  CONFLUX_REQUIRE(
      o.resized_crop_ratio_min > 0 && o.resized_crop_ratio_min <= o.resized_crop_ratio_max,
      "transform.resized_crop_ratio_min = {} and transform.resized_crop_ratio_max = {} "
      "must satisfy 0 < min <= max (aspect ratios w/h)",
      o.resized_crop_ratio_min, o.resized_crop_ratio_max);
  CONFLUX_REQUIRE(o.rotation_degrees >= 0 && o.rotation_degrees <= 180,
                  "transform.rotation_degrees = {} must lie in [0, 180]", o.rotation_degrees);
  for (const auto& [name, value] :
       {std::pair{"brightness", o.brightness}, std::pair{"contrast", o.contrast},
        std::pair{"saturation", o.saturation}}) {
    CONFLUX_REQUIRE(value >= 0, "transform.{} = {} must be >= 0 (0 = off)", name, value);
  }
  CONFLUX_REQUIRE(o.blur_kernel >= 0 && (o.blur_kernel == 0 || o.blur_kernel % 2 == 1),
                  "transform.blur_kernel = {} must be an odd size, or 0 to switch blurring off",
                  o.blur_kernel);
  CONFLUX_REQUIRE(o.blur_sigma_min > 0 && o.blur_sigma_min <= o.blur_sigma_max,
                  "transform.blur_sigma_min = {} and transform.blur_sigma_max = {} must satisfy "
                  "0 < min <= max",
                  o.blur_sigma_min, o.blur_sigma_max);
  CONFLUX_REQUIRE(is_probability(o.blur_probability),
                  "transform.blur_probability = {} must lie in [0, 1]", o.blur_probability);
  CONFLUX_REQUIRE(is_probability(o.cutout_probability),
                  "transform.cutout_probability = {} must lie in [0, 1]", o.cutout_probability);
  CONFLUX_REQUIRE(
      o.cutout_size >= 0 && o.cutout_size <= std::min(output_.height, output_.width),
      "transform.cutout_size = {} must lie in [0, {}] (0 = off; at most the {}x{} output image)",
      o.cutout_size, std::min(output_.height, output_.width), output_.height, output_.width);
}

void SampleTransform::check_part(const ImageView& part, const RegionPlacement& placement) const {
  const ImageShape& s = part.shape;
  CONFLUX_CHECK(part.pixels.size() == s.size(), "an image of {}x{}x{} pixels holds {} bytes",
                s.channels, s.height, s.width, part.pixels.size());
  CONFLUX_CHECK(region_ && s.channels == input_.channels && s.height > 0 && s.width > 0 &&
                    placement.image_height > 0 && placement.image_width > 0 &&
                    placement.scale_eighths >= 1 && placement.scale_eighths <= 8,
                "a part ({}x{}x{} pixels at scale {}/8) of a {}x{} image needs transform.decode = "
                "\"region\" and images of any size with {} channels",
                s.channels, s.height, s.width, placement.scale_eighths, placement.image_width,
                placement.image_height, input_.channels);
}

void SampleTransform::check_image(const ImageView& image) const {
  const ImageShape& s = image.shape;
  CONFLUX_CHECK(image.pixels.size() == s.size(), "an image of {}x{}x{} pixels holds {} bytes",
                s.channels, s.height, s.width, image.pixels.size());
  CONFLUX_CHECK(
      variable_ ? s.channels == input_.channels && s.height > 0 && s.width > 0 : s == input_,
      "the transform takes {}x{}x{} images (0 = any size), not {}x{}x{}", input_.channels,
      input_.height, input_.width, s.channels, s.height, s.width);
}

}  // namespace conflux::data
