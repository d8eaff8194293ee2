#pragma once
/// @file transforms.hpp
/// CPU image transforms from uint8 CHW to normalised float CHW. Light: zero-pad + random crop,
/// random horizontal flip, scale to [0, 1] + per-channel normalise. Heavy (ImageNet-style,
/// CPU-bound): random resized crop (bilinear), rotation, colour jitter, Gaussian blur, cutout,
/// and an optional user plugin. Every random choice comes from a generator keyed by
/// (seed, epoch, sample index), so a sample's output never depends on which thread or rank
/// computed it (docs/design.md invariant 2).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "conflux/config/sections.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/io/in_memory_split.hpp"
#include "conflux/data/io/jpeg_region.hpp"
#include "conflux/data/transform/augment_ops.hpp"
#include "conflux/data/transform/transform_plugin.hpp"

namespace conflux::data {

/// The [transform] settings plus the loaded user plugin (TransformSection::plugin is its path).
struct TransformOptions : TransformSection {
  std::shared_ptr<const TransformPlugin> loaded_plugin = nullptr;  ///< user transform, or null
};

/// The per-sample transform. Training applies the random parts; evaluation takes the centre
/// crop without padding or flipping (with resized_crop: the whole image resized; for images of
/// varying size: the shorter side resized to eval_resize, then the centre crop), and no heavy
/// random op, cutout or plugin. Without any heavy option or plugin, training is the light path,
/// bit for bit as before the heavy options existed.
class SampleTransform {
 public:
  /// `input` is the shape of every image, or {channels, 0, 0} for images of any size (which
  /// needs transform.resized_crop). InputError when the options do not fit images of `input`
  /// (crop larger than the padded image, mean/std length neither 1 nor C) or a heavy option is
  /// out of range.
  SampleTransform(const TransformOptions& options, ImageShape input);
  /// Shape of the output image.
  ImageShape output_shape() const noexcept { return output_; }
  /// True when the transform takes images of any size (input height and width 0).
  bool variable_input() const noexcept { return variable_; }
  /// Augmented training sample: writes output_shape().size() floats to `out`. The image has the
  /// constructor's shape, or for variable input its channels and any positive height and width.
  void train(ImageView image, std::uint64_t seed, std::uint32_t epoch, std::uint64_t sample_index,
             float* out) const;
  /// True when the training output is an 8-bit image normalised per channel (the light path,
  /// or a resized crop and flip with nothing else): train() is then train_pixels() followed by
  /// normalise(), and batches can travel as pixels, a quarter of the floats' bytes.
  bool pixel_output() const noexcept { return pixel_output_; }
  /// The training sample before normalisation (needs pixel_output()): output_shape().size()
  /// bytes to `out`, the same random choices as train().
  void train_pixels(ImageView image, std::uint64_t seed, std::uint32_t epoch,
                    std::uint64_t sample_index, std::uint8_t* out) const;
  /// Normalises `samples` 8-bit images of output_shape() into floats: (p / 255 - mean) / std
  /// per channel, computed as p * scale + shift, the one conversion every path uses.
  void normalise(const std::uint8_t* pixels, std::size_t samples, float* out) const;
  /// normalise()'s factors per channel (output_shape().channels each): a consumer that
  /// normalises elsewhere (the GPU trainer's input kernel) applies data::normalised_pixel.
  const std::vector<float>& pixel_scale() const noexcept { return scale_; }
  const std::vector<float>& pixel_shift() const noexcept { return shift_; }
  /// Deterministic evaluation sample (centre crop or resize, no flip).
  void eval(ImageView image, float* out) const;
  /// eval() before normalisation: output_shape().size() bytes; normalise() of them is eval().
  void eval_pixels(ImageView image, std::uint8_t* out) const;
  /// The source window train() reads for an image of width x height (a resized crop's box, or
  /// the random crop clipped to the image, or the whole image), so that a decoder can pick a
  /// reduced scale before train() runs. Exactly the window train() uses for the same key.
  augment::Box train_crop(int width, int height, std::uint64_t seed, std::uint32_t epoch,
                          std::uint64_t sample_index) const;
  /// The shorter side eval() resizes images of varying size to (transform.eval_resize, or its
  /// default resized_crop * 8 / 7); 0 for fixed-size input, whose eval reads the image as is.
  int eval_short_side() const noexcept { return variable_ ? eval_resize_ : 0; }
  /// The size eval() resizes a width x height image of varying size to before its centre crop,
  /// as {0, 0, height, width}.
  augment::Box eval_resized(int width, int height) const;

  /// True when a JPEG may be decoded in part (transform.decode = "region", a resized crop of
  /// images of any size): training then needs only train_crop()'s window, and evaluation
  /// only enough pixels for eval_resized(), so the decoder may use a reduced DCT scale.
  bool region_decode() const noexcept { return region_; }
  /// train() of an image decoded in part: `part` holds the pixels `placement` locates in the
  /// whole image, which must cover train_crop() of the whole image's size for this key. The
  /// same random choices as train() of the whole image; at scale 1/1 the same output, bit for
  /// bit.
  void train(ImageView part, const RegionPlacement& placement, std::uint64_t seed,
             std::uint32_t epoch, std::uint64_t sample_index, float* out) const;
  /// train_pixels() of an image decoded in part (as the train() above).
  void train_pixels(ImageView part, const RegionPlacement& placement, std::uint64_t seed,
                    std::uint32_t epoch, std::uint64_t sample_index, std::uint8_t* out) const;
  /// eval() of the whole image decoded at a reduced scale (placement at (0, 0)).
  void eval(ImageView part, const RegionPlacement& placement, float* out) const;
  /// eval_pixels() of the whole image decoded at a reduced scale.
  void eval_pixels(ImageView part, const RegionPlacement& placement, std::uint8_t* out) const;

 private:
  struct SampleKey {
    std::uint64_t seed;
    std::uint32_t epoch;
    std::uint64_t sample_index;
  };
  // A sample's pixels: the whole image, or a part of it that `placement` locates.
  struct Source {
    ImageView image;
    const RegionPlacement* placement = nullptr;
  };
  void validate_input(const TransformOptions& options, ImageShape input);
  void validate_heavy() const;
  void check_image(const ImageView& image) const;
  void check_part(const ImageView& part, const RegionPlacement& placement) const;
  augment::ResizeWindow crop_window(const Source& src, const SampleKey& key) const;
  void crop_offsets(Rng& rng, int& top, int& left) const;
  augment::Box resized_crop_box(int height, int width, const SampleKey& key) const;
  void render(std::span<const std::uint8_t> image, int top, int left, bool flip,
              std::uint8_t* out) const;
  void train_pixels_of(const Source& src, const SampleKey& key, std::uint8_t* out) const;
  void train_source(const Source& src, const SampleKey& key, float* out) const;
  bool heavy_flip(const SampleKey& key) const;
  // The heavy path's steps, in order; each op draws from its own stream of `key`.
  void train_heavy(const Source& src, const SampleKey& key, float* out) const;
  void resized_crop(const Source& src, const SampleKey& key, bool flip, std::uint8_t* out) const;
  void heavy_geometry(const Source& src, const SampleKey& key, bool flip, std::vector<float>*& work,
                      std::vector<float>*& spare) const;
  void heavy_colour(float* img, const SampleKey& key) const;
  void heavy_normalise(std::vector<float>& work, const SampleKey& key, float* out) const;
  void heavy_cutout(float* out, const SampleKey& key) const;
  void eval_any_size(const Source& src, std::uint8_t* out) const;
  TransformOptions options_;
  ImageShape input_;
  ImageShape output_;
  bool variable_ = false;       // images of any size: input_ is {channels, 0, 0}
  bool heavy_ = false;          // any heavy option or a plugin: train() takes train_heavy()
  bool fused_ = false;          // heavy, but nothing between the resized crop and normalise
  bool pixel_output_ = false;   // training output is normalise(8-bit image): see pixel_output()
  bool region_ = false;         // see region_decode()
  int eval_resize_ = 0;         // variable input: the shorter side eval() resizes to
  std::vector<float> scale_;    // per channel: 1 / (255 * std)
  std::vector<float> shift_;    // per channel: -mean / std
  std::vector<float> inv_std_;  // per channel: 1 / std, for [0, 1] input (after a plugin)
};

}  // namespace conflux::data
