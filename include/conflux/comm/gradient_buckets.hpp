#pragma once
/// @file gradient_buckets.hpp
/// Gradient buckets: the layers' parts of the flat gradient buffer grouped, in the order the
/// backward pass finishes them, into contiguous ranges of about a bucket's size, so that a
/// gradient exchange can start summing a bucket while backward computes the layers before it
/// (GradientSync::gradients_ready; PyTorch DDP's buckets, 25 MB by default). Pure bookkeeping:
/// which bucket a finished layer completes.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace conflux::comm {

/// [begin, end) of the flat gradient buffer, in values.
struct GradientRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const noexcept { return end - begin; }
  bool operator==(const GradientRange&) const = default;
};

/// The buckets of one model and what one backward pass has completed of them.
class GradientBuckets {
 public:
  /// `layers[i]`: layer i's gradients (empty for a layer without parameters); `order`: the
  /// layer indices in the order backward finishes them. A bucket takes layers in that order
  /// until it holds at least `bucket_values` values, and ends early where the next layer's
  /// range is not adjacent (a bucket is one contiguous range). RuntimeError when `order` is
  /// not a permutation of the layers.
  GradientBuckets(std::span<const GradientRange> layers, std::span<const std::size_t> order,
                  std::size_t bucket_values);

  /// The buckets, in the order they complete.
  const std::vector<GradientRange>& buckets() const noexcept { return buckets_; }
  /// Layer `layer`'s gradients are final: the bucket this completes, if it does.
  std::optional<GradientRange> layer_done(std::size_t layer);
  /// Starts a new backward pass (every bucket incomplete again).
  void reset();

 private:
  std::vector<GradientRange> buckets_;
  std::vector<int> bucket_of_;          // per layer: its bucket, -1 without parameters
  std::vector<std::size_t> layers_in_;  // per bucket: layers with parameters
  std::vector<std::size_t> left_;       // per bucket: layers not done in this pass
};

}  // namespace conflux::comm
