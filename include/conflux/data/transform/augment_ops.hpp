#pragma once
/// @file augment_ops.hpp
/// Per-image kernels of the heavy augmentations, as free functions over float CHW buffers in
/// pixel units ([0, 255], what a uint8 source gives). SampleTransform chains them; they are
/// public so that tests can drive each one with a forced parameter (angle, factor, sigma).
/// Each follows torchvision's tensor semantics unless its comment says otherwise.

#include <cstdint>
#include <span>

#include "conflux/core/rng.hpp"
#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::data::augment {

/// Largest pixel value; colour jitter clamps to [0, kPixelMax] like torchvision on uint8.
inline constexpr float kPixelMax = 255.0f;

/// A window of a source image, in source pixels.
struct Box {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  bool operator==(const Box&) const = default;
};

/// torchvision RandomResizedCrop.get_params: up to 10 tries of an area fraction ~ U(scale) and
/// a log-uniform aspect ratio (w/h) ~ ratio, else the centre crop clamped to the ratio range.
Box random_resized_crop_box(int height, int width, float scale_min, float scale_max,
                            float ratio_min, float ratio_max, Rng& rng);

/// Copies the out_h x out_w window at (top, left) of `src` to float; pixels outside the source
/// read as 0 (zero padding). With `flip` the window is mirrored left-right.
void crop_to_float(std::span<const std::uint8_t> src, ImageShape in, int top, int left, int out_h,
                   int out_w, bool flip, float* dst);

/// Where a resized area's edges lie between pixels: it starts `top`, `left` pixels into a box
/// and spans `height` x `width` pixels (fractions allowed), as a crop drawn on the full image
/// lands in an image decoded at a reduced scale. Height and width 0: the box's own edges.
struct SubPixelSpan {
  float top = 0;
  float left = 0;
  float height = 0;
  float width = 0;
};

/// Where a bilinear resize reads and writes: `box` of the source is resized to full_height x
/// full_width, and the height x width window at (top, left) of that resized image is written.
/// A resized crop writes the whole resized image; resize + centre crop writes a window of it
/// without computing the rest. With `span`, the resized area is that span inside `box`, whose
/// pixels are still the only ones read.
struct ResizeWindow {
  Box box;
  int full_height = 0;
  int full_width = 0;
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  SubPixelSpan span{};
};

/// Where `box` of an image (full-size pixels) lies in a part of it decoded at scale k/8 whose
/// pixel (0, 0) is pixel (part_top, part_left) of the whole scaled image, `part` pixels large:
/// the whole pixels it touches and the exact span inside them. At k = 8 the span is the box
/// itself shifted, so the resize reads and weighs exactly the pixels the full image gives.
ResizeWindow scaled_window(Box box, int scale_eighths, int part_top, int part_left,
                           ImageShape part);

/// Bilinear resize, align_corners = false and no antialiasing (PyTorch's interpolate; taps
/// never read outside `box`), separable: a horizontal pass per source row, then a vertical pass
/// per output row, each result rounded to the nearest pixel value (halves up), as PIL and
/// torchvision's uint8 resize give 8-bit images. With `flip` the result is mirrored left-right.
void resize_bilinear(ImageView src, const ResizeWindow& window, bool flip, std::uint8_t* dst);

/// The resize above written as floats in pixel units (whole numbers in [0, 255]).
void resize_bilinear(ImageView src, const ResizeWindow& window, bool flip, float* dst);

/// The resize above for the whole resized image of `box` (inside the source), to out_h x
/// out_w, written as floats in pixel units (whole numbers in [0, 255]).
void resize_bilinear(std::span<const std::uint8_t> src, ImageShape in, Box box, int out_h,
                     int out_w, bool flip, float* dst);

/// Rotates `src` counter-clockwise by `degrees` about the image centre into `dst` (same shape,
/// not aliasing src): bilinear, source pixels outside the image count as 0.
void rotate(const float* src, ImageShape shape, float degrees, float* dst);

/// Multiplies by `factor` and clamps to [0, kPixelMax].
void adjust_brightness(float* chw, ImageShape shape, float factor);

/// Blends with the mean grey level (mean of the 0.299/0.587/0.114 greyscale for 3 channels,
/// of all values otherwise): factor * x + (1 - factor) * mean, clamped to [0, kPixelMax].
void adjust_contrast(float* chw, ImageShape shape, float factor);

/// Blends each pixel with its greyscale value: factor * x + (1 - factor) * grey, clamped.
/// Only defined for 3 channels; other channel counts are left unchanged (as torchvision does).
void adjust_saturation(float* chw, ImageShape shape, float factor);

/// Normalised 1-D Gaussian of odd size `kernel` (torchvision _get_gaussian_kernel1d) into
/// `weights` (kernel values).
void gaussian_kernel(int kernel, float sigma, float* weights);

/// Separable Gaussian blur (odd `kernel`, `sigma` > 0) in place, reflect borders (torchvision
/// "reflect": the edge pixel is not repeated, index -1 reads 1).
void gaussian_blur(float* chw, ImageShape shape, int kernel, float sigma);

/// Sets every channel of the size x size square whose centre is (centre_y, centre_x) to 0; the
/// square spans [centre - size / 2, centre - size / 2 + size) and is clipped at the borders.
void cutout(float* chw, ImageShape shape, int centre_y, int centre_x, int size);

}  // namespace conflux::data::augment
