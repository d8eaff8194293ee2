#pragma once
/// @file tensor.hpp
/// A dense float tensor, batch-major: shape [N, C, H, W] for images, [N, F] for features.

#include <cstddef>
#include <numeric>
#include <vector>

#include <cstdint>

namespace conflux::model {

/// A class label: int32, so that any class count a dataset has fits (ImageNet's 1000, or more).
using Label = std::int32_t;
/// The label of a sample skipped as corrupt (data.on_corrupt = "skip"): the loss leaves it
/// out (no loss, no gradient, not counted in accuracy), wherever its batch was built.
inline constexpr Label kSkippedLabel = -1;

/// Dense row-major float tensor owning its storage; resize() keeps capacity for reuse.
struct Tensor {
  std::vector<int> shape;
  std::vector<float> data;

  /// Sets the shape and resizes the storage (values unspecified after growth).
  void resize(std::vector<int> new_shape) {
    shape = std::move(new_shape);
    data.resize(count_of(shape));
  }
  /// Number of elements.
  std::size_t size() const noexcept { return data.size(); }
  /// Batch dimension (shape[0]).
  int batch() const noexcept { return shape.empty() ? 0 : shape[0]; }
  /// Elements per batch entry.
  std::size_t per_sample() const noexcept { return batch() == 0 ? 0 : data.size() / batch(); }
  /// Product of a shape's dimensions.
  static std::size_t count_of(const std::vector<int>& s) {
    return std::accumulate(s.begin(), s.end(), std::size_t{1},
                           [](std::size_t a, int b) { return a * static_cast<std::size_t>(b); });
  }
};

}  // namespace conflux::model
