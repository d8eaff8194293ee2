#pragma once
/// @file transform_params.hpp
/// The plain settings of the sample transform, as the [transform] config section holds them and
/// as SampleTransform takes them: one struct, so a new option is declared once.

#include <vector>

namespace conflux::data {

/// Transform settings without the loaded plugin.
struct TransformParams {
  int pad = 0;              ///< zero padding on each side before cropping
  int crop = 0;             ///< crop size; 0 = keep the input size
  bool hflip = false;       ///< random horizontal flip, p = 0.5
  std::vector<float> mean;  ///< 1 or C values
  std::vector<float> std;   ///< 1 or C values

  // Heavy augmentations, applied in this order; each is off at its default.
  int resized_crop = 0;  ///< RandomResizedCrop output size (square); 0 = off; excludes pad/crop
  float resized_crop_scale_min = 0.08f;  ///< area fraction range of the crop
  float resized_crop_scale_max = 1.0f;
  float resized_crop_ratio_min = 0.75f;  ///< aspect-ratio range (w/h), sampled log-uniformly
  float resized_crop_ratio_max = 4.0f / 3.0f;
  float rotation_degrees = 0;   ///< rotate by U(-d, d) degrees, bilinear, zero fill; 0 = off
  float brightness = 0;         ///< factor U(1-b, 1+b); 0 = off
  float contrast = 0;           ///< blend with the mean grey level, factor U(1-c, 1+c); 0 = off
  float saturation = 0;         ///< blend with the greyscale image, U(1-s, 1+s); 3 channels only
  int blur_kernel = 0;          ///< Gaussian blur kernel size (odd); 0 = off
  float blur_sigma_min = 0.1f;  ///< sigma ~ U(min, max)
  float blur_sigma_max = 2.0f;
  float blur_probability = 0.5f;    ///< chance a sample is blurred
  int cutout_size = 0;              ///< side of a zeroed square (after normalisation); 0 = off
  float cutout_probability = 1.0f;  ///< chance a sample gets the square
};

}  // namespace conflux::data
