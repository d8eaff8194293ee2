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
#include "conflux/data/io/dataset.hpp"
#include "conflux/data/transform/transform_plugin.hpp"

namespace conflux::data {

/// The [transform] settings plus the loaded user plugin (TransformSection::plugin is its path).
struct TransformOptions : TransformSection {
  std::shared_ptr<const TransformPlugin> loaded_plugin = nullptr;  ///< user transform, or null
};

/// The per-sample transform. Training applies the random parts; evaluation takes the centre
/// crop without padding or flipping (with resized_crop: the whole image resized), and no heavy
/// random op, cutout or plugin. Without any heavy option or plugin, training is the light path,
/// bit for bit as before the heavy options existed.
class SampleTransform {
 public:
  /// InputError when the options do not fit images of `input` (crop larger than the padded
  /// image, mean/std length neither 1 nor C) or a heavy option is out of range.
  SampleTransform(const TransformOptions& options, ImageShape input);
  /// Shape of the output image.
  ImageShape output_shape() const noexcept { return output_; }
  /// Augmented training sample: writes output_shape().size() floats to `out`.
  void train(std::span<const std::uint8_t> image, std::uint64_t seed, std::uint32_t epoch,
             std::uint64_t sample_index, float* out) const;
  /// Deterministic evaluation sample (centre crop or whole-image resize, no flip).
  void eval(std::span<const std::uint8_t> image, float* out) const;

 private:
  void validate_heavy() const;
  void render(std::span<const std::uint8_t> image, int top, int left, bool flip, float* out) const;
  // The heavy path's steps, in order; each op draws from its own stream of `key`.
  struct SampleKey {
    std::uint64_t seed;
    std::uint32_t epoch;
    std::uint64_t sample_index;
  };
  void train_heavy(std::span<const std::uint8_t> image, std::uint64_t seed, std::uint32_t epoch,
                   std::uint64_t sample_index, float* out) const;
  void heavy_geometry(std::span<const std::uint8_t> image, const SampleKey& key,
                      std::vector<float>*& work, std::vector<float>*& spare) const;
  void heavy_colour(float* img, const SampleKey& key) const;
  void heavy_normalise(std::vector<float>& work, const SampleKey& key, float* out) const;
  void heavy_cutout(float* out, const SampleKey& key) const;
  TransformOptions options_;
  ImageShape input_;
  ImageShape output_;
  bool heavy_ = false;          // any heavy option or a plugin: train() takes train_heavy()
  std::vector<float> scale_;    // per channel: 1 / (255 * std)
  std::vector<float> shift_;    // per channel: -mean / std
  std::vector<float> inv_std_;  // per channel: 1 / std, for [0, 1] input (after a plugin)
};

}  // namespace conflux::data
