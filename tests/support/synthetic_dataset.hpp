#pragma once
/// @file synthetic_dataset.hpp
/// Small in-memory datasets for tests that must not depend on the real data files.

#include <cstddef>
#include <cstdint>

#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::testing {

/// `n` images of `shape` whose byte i (over the whole image buffer) is pixel(i); labels cycle
/// through 0..9.
template <typename Pixel>
data::InMemorySplit synthetic_dataset(std::size_t n, data::ImageShape shape, Pixel pixel) {
  data::InMemorySplit d;
  d.name = "synthetic";
  d.shape = shape;
  d.num_classes = 10;
  d.images.resize(n * shape.size());
  for (std::size_t i = 0; i < d.images.size(); ++i) d.images[i] = pixel(i);
  for (std::size_t i = 0; i < n; ++i) d.labels.push_back(static_cast<model::Label>(i % 10));
  return d;
}

/// As above with the ramp 7i + 1 (mod 256).
inline data::InMemorySplit synthetic_dataset(std::size_t n, data::ImageShape shape) {
  return synthetic_dataset(n, shape,
                           [](std::size_t i) { return static_cast<std::uint8_t>(i * 7 + 1); });
}

}  // namespace conflux::testing
