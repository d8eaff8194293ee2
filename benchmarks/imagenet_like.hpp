#pragma once
/// @file imagenet_like.hpp
/// ImageNet-like test images for `conflux-bench make-images --like imagenet`: the sizes,
/// aspect ratios and JPEG bytes per pixel of photographs, drawn from a seed with integer
/// arithmetic only, so the same seed gives the same pixels on every machine.

#include <cstddef>
#include <cstdint>
#include <string>

#include "../testkit/image_encode.hpp"

namespace conflux::bench {

// The encoders and their image type live in testkit/, shared with the unit tests.
using testkit::channels_of;
using testkit::Chroma;
using testkit::encode_jpeg;
using testkit::encode_png;
using testkit::PixelKind;
using testkit::RawImage;

/// What is drawn for one image: its size, its chroma subsampling and its amount of texture.
struct ImagenetLikeDraw {
  int width = 0;
  int height = 0;
  Chroma chroma = Chroma::k420;
  int texture = 256;  ///< texture amplitude in 1/256 of the typical image's
};

/// The draw of image `index` of split `split` under `seed`.
ImagenetLikeDraw draw_imagenet_like(std::uint64_t seed, std::uint64_t split, std::size_t index);

/// That image's pixels: `base` (a small RGB photograph) upscaled to the drawn size, with
/// multi-scale texture, sharp edges and grain added to its luma and a little to its colour.
RawImage imagenet_like_pixels(const RawImage& base, const ImagenetLikeDraw& draw,
                              std::uint64_t seed, std::uint64_t split, std::size_t index);

/// The folder name of class `k`: class0000, class0001, ... (nine characters, as ImageNet's
/// WordNet ids, and sorted bytewise in class order).
std::string imagenet_like_class_name(std::size_t k);

}  // namespace conflux::bench
