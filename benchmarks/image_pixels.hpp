#pragma once
/// @file image_pixels.hpp
/// Pixel operations of the test-image writers (`conflux-bench make-images`): resizing and
/// conversions to the kinds the encoders write. Integer arithmetic only, so the bytes written
/// do not depend on the machine or the maths library.

#include "../testkit/image_encode.hpp"

namespace conflux::bench {

// The encoders and their image type live in testkit/, shared with the unit tests.
using testkit::channels_of;
using testkit::Chroma;
using testkit::encode_jpeg;
using testkit::encode_png;
using testkit::PixelKind;
using testkit::RawImage;

/// `src` resized to width x height by bilinear interpolation (pixel centres aligned).
RawImage resize_bilinear(const RawImage& src, int width, int height);

/// An RGB image with an alpha channel added: a diagonal ramp from opaque to half transparent.
RawImage with_alpha(const RawImage& rgb);

/// An RGB image as gray (BT.601 luma).
RawImage to_gray(const RawImage& rgb);

/// An RGB image as the inverted CMYK that Adobe JPEGs hold (255 = no ink), with the black
/// channel carrying the brightness: decoding R = C * K / 255 (rounded) gives the RGB back.
RawImage to_inverted_cmyk(const RawImage& rgb);

}  // namespace conflux::bench
