#pragma once
/// @file transforms.hpp
/// CPU image transforms from uint8 CHW to normalised float CHW: zero-pad + random crop, random
/// horizontal flip, scale to [0, 1] + per-channel normalise. Every random choice comes from a
/// generator keyed by (seed, epoch, sample index), so a sample's output never depends on which
/// thread or rank computed it (ARCHITECTURE.md invariant 2).

#include <cstdint>
#include <span>
#include <vector>

#include "conflux/data/dataset.hpp"

namespace conflux::data {

/// Transform settings (from the [transform] section).
struct TransformOptions {
  int pad = 0;              ///< zero padding on each side before cropping
  int crop = 0;             ///< crop size; 0 = keep the input size
  bool hflip = false;       ///< random horizontal flip, p = 0.5
  std::vector<float> mean;  ///< 1 or C values
  std::vector<float> std;   ///< 1 or C values
};

/// The per-sample transform. Training applies the random parts; evaluation takes the centre
/// crop without padding or flipping.
class SampleTransform {
 public:
  /// InputError when the options do not fit images of `input` (crop larger than the padded
  /// image, mean/std length neither 1 nor C).
  SampleTransform(const TransformOptions& options, ImageShape input);
  /// Shape of the output image.
  ImageShape output_shape() const noexcept { return output_; }
  /// Augmented training sample: writes output_shape().size() floats to `out`.
  void train(std::span<const std::uint8_t> image, std::uint64_t seed, std::uint32_t epoch,
             std::uint64_t sample_index, float* out) const;
  /// Deterministic evaluation sample (centre crop, no flip).
  void eval(std::span<const std::uint8_t> image, float* out) const;

 private:
  void render(std::span<const std::uint8_t> image, int top, int left, bool flip, float* out) const;
  TransformOptions options_;
  ImageShape input_;
  ImageShape output_;
  std::vector<float> scale_;  // per channel: 1 / (255 * std)
  std::vector<float> shift_;  // per channel: -mean / std
};

}  // namespace conflux::data
