#pragma once
/// @file in_memory_split.hpp
/// An in-memory labelled image dataset (uint8 pixels, CHW per sample), as every reader returns.

#include <cstddef>
#include <cstdint>

#include <span>
#include <string>
#include <vector>
#include "conflux/model/tensor.hpp"

namespace conflux::data {

/// Per-sample image geometry.
struct ImageShape {
  int channels = 0;
  int height = 0;
  int width = 0;
  /// Bytes (= pixels over all channels) of one image.
  std::size_t size() const noexcept { return static_cast<std::size_t>(channels) * height * width; }
  bool operator==(const ImageShape&) const = default;
};

/// One image's pixels with their geometry (uint8, CHW; pixels.size() == shape.size()). What
/// decoders and sources hand on and what the transforms read; it owns nothing.
struct ImageView {
  ImageShape shape;
  std::span<const std::uint8_t> pixels;
};

/// A source file a dataset was read from, with its SHA-256 (lower-case hex).
struct SourceFile {
  std::string name;  ///< file name without directory, e.g. "train-images-idx3-ubyte.gz"
  std::string sha256;
  bool operator==(const SourceFile&) const = default;
};

/// One split (train or test) of a labelled image dataset.
struct InMemorySplit {
  std::string name;                      ///< "mnist", "fashion-mnist", "cifar10"
  ImageShape shape;                      ///< geometry of every image
  int num_classes = 0;                   ///< labels lie in [0, num_classes)
  std::vector<std::string> class_names;  ///< num_classes entries
  std::vector<std::uint8_t> images;      ///< size() * shape.size() bytes, sample-major, CHW
  std::vector<model::Label> labels;      ///< size() entries
  std::vector<SourceFile> sources;       ///< files this split was read from

  /// Number of samples.
  std::size_t size() const noexcept { return labels.size(); }
  /// Pixels of sample i (CHW).
  std::span<const std::uint8_t> image(std::size_t i) const noexcept {
    return {images.data() + i * shape.size(), shape.size()};
  }
};

/// The train and test splits of one dataset.
struct InMemorySplits {
  InMemorySplit train;
  InMemorySplit test;
};

}  // namespace conflux::data
