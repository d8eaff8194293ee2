#include "conflux/data/transform/transforms.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/transform/augment_ops.hpp"
#include "conflux/data/transform/normalise.hpp"

namespace conflux::data {

namespace {

// A stream constant spells four ASCII letters, so keys read back in a debugger.
constexpr std::uint64_t stream(const char (&name)[5]) {
  std::uint64_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(name[i]);
  return value;
}

// The light path's one generator: crop offsets, then flip. Frozen: model digests depend on it.
constexpr std::uint64_t kAugmentStream = stream("augm");
static_assert(kAugmentStream == 0x6175676d);
// The heavy path gives every op its own generator, so switching one op on or off never shifts
// another op's numbers.
constexpr std::uint64_t kCropStream = stream("crop");
constexpr std::uint64_t kResizedCropStream = stream("rszc");
constexpr std::uint64_t kFlipStream = stream("flip");
constexpr std::uint64_t kRotationStream = stream("rota");
constexpr std::uint64_t kBrightnessStream = stream("brgt");
constexpr std::uint64_t kContrastStream = stream("cntr");
constexpr std::uint64_t kSaturationStream = stream("satu");
constexpr std::uint64_t kBlurStream = stream("blur");
constexpr std::uint64_t kCutoutStream = stream("cuto");
constexpr std::uint64_t kPluginStream = stream("plug");

float per_channel(const std::vector<float>& values, int c) {
  return values.size() == 1 ? values[0] : values[static_cast<std::size_t>(c)];
}

// out = in * scale[c] + shift[c], plane by plane.
void affine_per_channel(const float* in, ImageShape shape, const std::vector<float>& scale,
                        const std::vector<float>& shift, float* out) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  for (int c = 0; c < shape.channels; ++c) {
    const float a = scale[c], b = shift[c];
    const float* from = in + c * plane;
    float* to = out + c * plane;
    for (std::size_t i = 0; i < plane; ++i) to[i] = from[i] * a + b;
  }
}

// Per-call scratch images, reused across samples on a thread; contents never outlive a call.
std::vector<float>& scratch(int which, std::size_t size) {
  thread_local std::vector<float> buffers[2];
  buffers[which].resize(size);
  return buffers[which];
}

// Per-call scratch for an 8-bit image on its way to normalisation.
std::uint8_t* pixel_scratch(std::size_t size) {
  thread_local std::vector<std::uint8_t> buffer;
  buffer.resize(size);
  return buffer.data();
}

}  // namespace

SampleTransform::SampleTransform(const TransformOptions& options, ImageShape input)
    : options_(options), input_(input), output_(input) {
  CONFLUX_REQUIRE(options.resized_crop >= 0, "transform.resized_crop = {} must be >= 0 (0 = off)",
                  options.resized_crop);
  CONFLUX_REQUIRE(options.resized_crop == 0 || (options.crop == 0 && options.pad == 0),
                  "transform.resized_crop = {} cannot be combined with transform.crop = {} or "
                  "transform.pad = {}: the resized crop already sets the output size; set them "
                  "to 0",
                  options.resized_crop, options.crop, options.pad);
  validate_input(options, input);
  const int padded_h = input.height + 2 * options.pad;
  const int padded_w = input.width + 2 * options.pad;
  if (options.crop > 0) {
    CONFLUX_REQUIRE(options.crop <= padded_h && options.crop <= padded_w,
                    "transform.crop = {} is larger than the padded image ({}x{} with "
                    "transform.pad = {})",
                    options.crop, padded_h, padded_w, options.pad);
    output_.height = output_.width = options.crop;
  } else {
    CONFLUX_REQUIRE(options.pad == 0,
                    "transform.pad = {} needs transform.crop (the crop brings the padded image "
                    "back to a fixed size)",
                    options.pad);
  }
  for (const auto* values : {&options.mean, &options.std}) {
    CONFLUX_REQUIRE(
        values->size() == 1 || values->size() == static_cast<std::size_t>(input.channels),
        "transform.{} has {} values but the images have {} channel(s); give 1 or {}",
        values == &options.mean ? "mean" : "std", values->size(), input.channels, input.channels);
  }
  for (int c = 0; c < input.channels; ++c) {
    const float sd = per_channel(options.std, c);
    scale_.push_back(1.0f / (255.0f * sd));
    shift_.push_back(-per_channel(options.mean, c) / sd);
    inv_std_.push_back(1.0f / sd);
  }
  if (options.resized_crop > 0) output_.height = output_.width = options.resized_crop;
  validate_heavy();
  heavy_ = options.resized_crop > 0 || options.rotation_degrees > 0 || options.brightness > 0 ||
           options.contrast > 0 || options.saturation > 0 || options.blur_kernel > 0 ||
           options.cutout_size > 0 || options.loaded_plugin != nullptr;
  // Saturation is a no-op (and draws nothing) unless there are 3 channels.
  const bool saturation = options.saturation > 0 && output_.channels == 3;
  fused_ = options.resized_crop > 0 && options.rotation_degrees == 0 && options.brightness == 0 &&
           options.contrast == 0 && !saturation && options.blur_kernel == 0 &&
           options.loaded_plugin == nullptr;
  pixel_output_ = !heavy_ || (fused_ && options.cutout_size == 0);
  CONFLUX_REQUIRE(options.decode == "region" || options.decode == "full",
                  "transform.decode = \"{}\": expected \"region\" or \"full\"", options.decode);
  region_ = variable_ && options.decode == "region";  // variable_ implies a resized crop
}

// The random crop's offsets in the padded image (light and heavy path, each with its stream).
void SampleTransform::crop_offsets(Rng& rng, int& top, int& left) const {
  top = static_cast<int>(rng.below(input_.height + 2 * options_.pad - output_.height + 1)) -
        options_.pad;
  left = static_cast<int>(rng.below(input_.width + 2 * options_.pad - output_.width + 1)) -
         options_.pad;
}

augment::Box SampleTransform::resized_crop_box(int height, int width, const SampleKey& key) const {
  Rng r{key.seed, kResizedCropStream, key.epoch, key.sample_index};
  return augment::random_resized_crop_box(
      height, width, options_.resized_crop_scale_min, options_.resized_crop_scale_max,
      options_.resized_crop_ratio_min, options_.resized_crop_ratio_max, r);
}

augment::Box SampleTransform::train_crop(int width, int height, std::uint64_t seed,
                                         std::uint32_t epoch, std::uint64_t sample_index) const {
  CONFLUX_CHECK(
      variable_ ? width > 0 && height > 0 : width == input_.width && height == input_.height,
      "train_crop: the transform takes {}x{} images (0 = any size), not {}x{}", input_.width,
      input_.height, width, height);
  if (options_.resized_crop > 0)
    return resized_crop_box(height, width, {seed, epoch, sample_index});
  if (options_.crop == 0) return {0, 0, height, width};
  // The stream train() draws the crop from: the light path's shared one or the heavy crop's.
  Rng rng{seed, heavy_ ? kCropStream : kAugmentStream, epoch, sample_index};
  int top = 0, left = 0;
  crop_offsets(rng, top, left);
  const int y0 = std::max(top, 0), x0 = std::max(left, 0);
  const int y1 = std::min(top + output_.height, height), x1 = std::min(left + output_.width, width);
  return {y0, x0, std::max(y1 - y0, 0), std::max(x1 - x0, 0)};
}

void SampleTransform::train(ImageView image, std::uint64_t seed, std::uint32_t epoch,
                            std::uint64_t sample_index, float* out) const {
  check_image(image);
  train_source({image}, {seed, epoch, sample_index}, out);
}

void SampleTransform::train(ImageView part, const RegionPlacement& placement, std::uint64_t seed,
                            std::uint32_t epoch, std::uint64_t sample_index, float* out) const {
  check_part(part, placement);
  train_source({part, &placement}, {seed, epoch, sample_index}, out);
}

void SampleTransform::train_source(const Source& src, const SampleKey& key, float* out) const {
  if (!pixel_output_) {
    train_heavy(src, key, out);
    return;
  }
  // The one way from pixels to floats, so a batch shipped as pixels and normalised by the
  // trainer is bit-identical to one built here (docs/design.md invariant 2).
  std::uint8_t* pixels = pixel_scratch(output_.size());
  train_pixels_of(src, key, pixels);
  normalise(pixels, 1, out);
}

void SampleTransform::train_pixels(ImageView image, std::uint64_t seed, std::uint32_t epoch,
                                   std::uint64_t sample_index, std::uint8_t* out) const {
  CONFLUX_CHECK(pixel_output_,
                "train_pixels: this transform's output is not an 8-bit image (a heavy op other "
                "than the resized crop and flip, or cutout, is on)");
  check_image(image);
  train_pixels_of({image}, {seed, epoch, sample_index}, out);
}

void SampleTransform::train_pixels(ImageView part, const RegionPlacement& placement,
                                   std::uint64_t seed, std::uint32_t epoch,
                                   std::uint64_t sample_index, std::uint8_t* out) const {
  CONFLUX_CHECK(pixel_output_, "train_pixels: this transform's output is not an 8-bit image");
  check_part(part, placement);
  train_pixels_of({part, &placement}, {seed, epoch, sample_index}, out);
}

void SampleTransform::train_pixels_of(const Source& src, const SampleKey& key,
                                      std::uint8_t* out) const {
  if (heavy_) {  // the resized crop and flip only
    resized_crop(src, key, heavy_flip(key), out);
    return;
  }
  const ImageView& image = src.image;
  // Draw order is fixed (crop offsets, then flip) so that the numbers are the same everywhere.
  Rng rng{key.seed, kAugmentStream, key.epoch, key.sample_index};
  int top = 0, left = 0;
  if (options_.crop > 0) crop_offsets(rng, top, left);
  const bool flip = options_.hflip && rng.coin();
  render(image.pixels, top, left, flip, out);
}

void SampleTransform::normalise(const std::uint8_t* pixels, std::size_t samples, float* out) const {
  const std::size_t plane = static_cast<std::size_t>(output_.height) * output_.width;
  for (std::size_t s = 0; s < samples; ++s) {
    for (int c = 0; c < output_.channels; ++c) {
      const float a = scale_[c], b = shift_[c];
      const std::size_t at = (s * output_.channels + c) * plane;
      const std::uint8_t* from = pixels + at;
      float* to = out + at;
      for (std::size_t i = 0; i < plane; ++i) to[i] = normalised_pixel(from[i], a, b);
    }
  }
}

bool SampleTransform::heavy_flip(const SampleKey& key) const {
  return options_.hflip && Rng{key.seed, kFlipStream, key.epoch, key.sample_index}.coin();
}

void SampleTransform::train_heavy(const Source& src, const SampleKey& key, float* out) const {
  const bool flip = heavy_flip(key);
  if (fused_) {
    // Nothing between the resized crop and normalisation: no float image in between.
    std::uint8_t* pixels = pixel_scratch(output_.size());
    resized_crop(src, key, flip, pixels);
    normalise(pixels, 1, out);
  } else {
    std::vector<float>* work = &scratch(0, output_.size());
    std::vector<float>* spare = &scratch(1, output_.size());
    heavy_geometry(src, key, flip, work, spare);
    heavy_colour(work->data(), key);
    heavy_normalise(*work, key, out);
  }
  heavy_cutout(out, key);
}

namespace {

Rng draw(std::uint64_t seed, std::uint64_t op, std::uint32_t epoch, std::uint64_t sample_index) {
  return Rng{seed, op, epoch, sample_index};
}

}  // namespace

// The random resized crop (with the flip folded in: a mirrored window is the same pixels as a
// later flip), the one implementation for fixed and varying image sizes.
void SampleTransform::resized_crop(const Source& src, const SampleKey& key, bool flip,
                                   std::uint8_t* out) const {
  augment::resize_bilinear(src.image, crop_window(src, key), flip, out);
}

// The resized crop's window: the box drawn for the whole image's size, in the pixels at hand.
augment::ResizeWindow SampleTransform::crop_window(const Source& src, const SampleKey& key) const {
  augment::ResizeWindow window;
  const ImageShape& shape = src.image.shape;
  if (src.placement == nullptr) {
    window.box = resized_crop_box(shape.height, shape.width, key);
  } else {
    const RegionPlacement& p = *src.placement;
    window = augment::scaled_window(resized_crop_box(p.image_height, p.image_width, key),
                                    p.scale_eighths, p.top, p.left, shape);
  }
  window.full_height = window.height = output_.height;
  window.full_width = window.width = output_.width;
  return window;
}

// Crop or resized crop, then rotation; `work` ends up holding the image in pixel units.
void SampleTransform::heavy_geometry(const Source& src, const SampleKey& key, bool flip,
                                     std::vector<float>*& work, std::vector<float>*& spare) const {
  const ImageView& image = src.image;
  if (options_.resized_crop > 0) {
    augment::resize_bilinear(image, crop_window(src, key), flip, work->data());
  } else {
    int top = 0, left = 0;
    if (options_.crop > 0) {
      Rng r = draw(key.seed, kCropStream, key.epoch, key.sample_index);
      crop_offsets(r, top, left);
    }
    augment::crop_to_float(image.pixels, input_, top, left, output_.height, output_.width, flip,
                           work->data());
  }
  if (options_.rotation_degrees > 0) {
    const float d = options_.rotation_degrees;
    Rng r = draw(key.seed, kRotationStream, key.epoch, key.sample_index);
    augment::rotate(work->data(), output_, r.uniform(-d, d), spare->data());
    std::swap(work, spare);
  }
}

// Colour jitter, then blur. Fixed order (torchvision permutes the jitter per sample; a fixed
// one is simpler to reason about).
void SampleTransform::heavy_colour(float* img, const SampleKey& key) const {
  const auto rng = [&](std::uint64_t op) {
    return draw(key.seed, op, key.epoch, key.sample_index);
  };
  if (options_.brightness > 0) {
    const float b = options_.brightness;
    augment::adjust_brightness(img, output_,
                               rng(kBrightnessStream).uniform(std::max(0.0f, 1 - b), 1 + b));
  }
  if (options_.contrast > 0) {
    const float c = options_.contrast;
    augment::adjust_contrast(img, output_,
                             rng(kContrastStream).uniform(std::max(0.0f, 1 - c), 1 + c));
  }
  if (options_.saturation > 0 && output_.channels == 3) {
    const float s = options_.saturation;
    augment::adjust_saturation(img, output_,
                               rng(kSaturationStream).uniform(std::max(0.0f, 1 - s), 1 + s));
  }
  if (options_.blur_kernel > 0) {
    Rng r = rng(kBlurStream);
    if (r.uniform() < options_.blur_probability) {
      augment::gaussian_blur(img, output_, options_.blur_kernel,
                             r.uniform(options_.blur_sigma_min, options_.blur_sigma_max));
    }
  }
}

// The user plugin (if any), then scale and normalise into `out`.
void SampleTransform::heavy_normalise(std::vector<float>& work, const SampleKey& key,
                                      float* out) const {
  float* img = work.data();
  if (!options_.loaded_plugin) {
    affine_per_channel(img, output_, scale_, shift_, out);
    return;
  }
  // The plugin ABI promises [0, 1] pixels, so scale and normalise become two steps here.
  for (float& v : work) v *= 1.0f / 255.0f;
  const std::uint64_t plugin_key =
      mix64(mix64(mix64(mix64(key.seed) ^ kPluginStream) ^ key.epoch) ^ key.sample_index);
  options_.loaded_plugin->apply(img, output_, plugin_key);
  affine_per_channel(img, output_, inv_std_, shift_, out);
}

// Cutout, after normalisation: the square is 0 in normalised units.
void SampleTransform::heavy_cutout(float* out, const SampleKey& key) const {
  if (options_.cutout_size <= 0) return;
  Rng r = draw(key.seed, kCutoutStream, key.epoch, key.sample_index);
  if (r.uniform() < options_.cutout_probability) {
    const int cy = static_cast<int>(r.below(static_cast<std::uint64_t>(output_.height)));
    const int cx = static_cast<int>(r.below(static_cast<std::uint64_t>(output_.width)));
    augment::cutout(out, output_, cy, cx, options_.cutout_size);
  }
}

void SampleTransform::eval(ImageView image, float* out) const {
  std::uint8_t* pixels = pixel_scratch(output_.size());
  eval_pixels(image, pixels);
  normalise(pixels, 1, out);
}

void SampleTransform::eval_pixels(ImageView image, std::uint8_t* out) const {
  check_image(image);
  if (variable_) {
    eval_any_size({image}, out);
  } else if (options_.resized_crop > 0) {
    // torchvision's eval recipe resizes then centre-crops; with a square output the whole
    // image resized is the closest fixed view and loses no pixels.
    const int h = output_.height, w = output_.width;
    augment::resize_bilinear(image, {{0, 0, input_.height, input_.width}, h, w, 0, 0, h, w}, false,
                             out);
  } else {
    render(image.pixels, (input_.height - output_.height) / 2, (input_.width - output_.width) / 2,
           false, out);
  }
}

void SampleTransform::eval(ImageView part, const RegionPlacement& placement, float* out) const {
  std::uint8_t* pixels = pixel_scratch(output_.size());
  eval_pixels(part, placement, pixels);
  normalise(pixels, 1, out);
}

void SampleTransform::eval_pixels(ImageView part, const RegionPlacement& placement,
                                  std::uint8_t* out) const {
  check_part(part, placement);
  eval_any_size({part, &placement}, out);
}

augment::Box SampleTransform::eval_resized(int width, int height) const {
  CONFLUX_CHECK(variable_ && width > 0 && height > 0,
                "eval_resized: needs images of any size and a positive size, not {}x{}", width,
                height);
  // The shorter side becomes `side`, the longer one side * long / short truncated (Python's
  // int(), as torchvision's _compute_resized_output_size; exact in integers).
  const int side = eval_resize_;
  if (width <= height)
    return {0, 0, static_cast<int>(static_cast<std::int64_t>(side) * height / width), side};
  return {0, 0, side, static_cast<int>(static_cast<std::int64_t>(side) * width / height)};
}

// torchvision Resize(eval_resize) + CenterCrop(resized_crop), computing only the crop.
void SampleTransform::eval_any_size(const Source& src, std::uint8_t* out) const {
  const ImageShape& shape = src.image.shape;
  const RegionPlacement* p = src.placement;
  const int h = p ? p->image_height : shape.height, w = p ? p->image_width : shape.width;
  const augment::Box resized = eval_resized(w, h);
  const int full_h = resized.height, full_w = resized.width;
  // center_crop's offsets: round((size - crop) / 2), Python's round (half to even), which is
  // std::nearbyint in the default rounding mode.
  const int crop = output_.height;
  const int top = static_cast<int>(std::nearbyint((full_h - crop) / 2.0));
  const int left = static_cast<int>(std::nearbyint((full_w - crop) / 2.0));
  augment::ResizeWindow window =
      p ? augment::scaled_window({0, 0, h, w}, p->scale_eighths, p->top, p->left, shape)
        : augment::ResizeWindow{{0, 0, h, w}};
  window.full_height = full_h;
  window.full_width = full_w;
  window.top = top;
  window.left = left;
  window.height = window.width = crop;
  augment::resize_bilinear(src.image, window, false, out);
}

void SampleTransform::render(std::span<const std::uint8_t> image, int top, int left, bool flip,
                             std::uint8_t* out) const {
  const int h = output_.height, w = output_.width;
  for (int c = 0; c < input_.channels; ++c) {
    const std::uint8_t* plane =
        image.data() + static_cast<std::size_t>(c) * input_.height * input_.width;
    for (int y = 0; y < h; ++y) {
      const int sy = y + top;
      std::uint8_t* row = out + (static_cast<std::size_t>(c) * h + y) * w;
      if (sy < 0 || sy >= input_.height) {
        std::fill(row, row + w, std::uint8_t{0});  // zero padding
        continue;
      }
      const std::uint8_t* src = plane + static_cast<std::size_t>(sy) * input_.width;
      if (!flip && left >= 0 && left + w <= input_.width) {
        std::copy(src + left, src + left + w, row);  // whole row inside the image
        continue;
      }
      for (int x = 0; x < w; ++x) {
        const int sx = (flip ? w - 1 - x : x) + left;
        row[x] = (sx < 0 || sx >= input_.width) ? std::uint8_t{0} : src[sx];
      }
    }
  }
}

}  // namespace conflux::data
