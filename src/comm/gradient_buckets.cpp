#include "conflux/comm/gradient_buckets.hpp"

#include <algorithm>

#include "conflux/core/error.hpp"

namespace conflux::comm {

GradientBuckets::GradientBuckets(std::span<const GradientRange> layers,
                                 std::span<const std::size_t> order, std::size_t bucket_values)
    : bucket_of_(layers.size(), -1) {
  std::vector<bool> seen(layers.size(), false);
  CONFLUX_CHECK(order.size() == layers.size(), "gradient buckets: an order of {} for {} layers",
                order.size(), layers.size());
  for (const std::size_t i : order) {
    CONFLUX_CHECK(i < layers.size() && !seen[i], "gradient buckets: layer {} twice or unknown", i);
    seen[i] = true;
    const GradientRange r = layers[i];
    if (r.size() == 0) continue;
    // Backward runs last layer first, and parameters lie in layer order: each range usually
    // ends where the bucket so far begins.
    const bool extend = !buckets_.empty() && buckets_.back().size() < bucket_values &&
                        (r.end == buckets_.back().begin || r.begin == buckets_.back().end);
    if (extend) {
      GradientRange& b = buckets_.back();
      b = {std::min(b.begin, r.begin), std::max(b.end, r.end)};
      ++layers_in_.back();
    } else {
      buckets_.push_back(r);
      layers_in_.push_back(1);
    }
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
  reset();
}

std::optional<GradientRange> GradientBuckets::layer_done(std::size_t layer) {
  CONFLUX_CHECK(layer < bucket_of_.size(), "gradient buckets: no layer {}", layer);
  const int b = bucket_of_[layer];
  if (b < 0) return std::nullopt;
  std::size_t& left = left_[static_cast<std::size_t>(b)];
  CONFLUX_CHECK(left > 0, "gradient buckets: layer {} finished twice in one pass", layer);
  if (--left > 0) return std::nullopt;
  return buckets_[static_cast<std::size_t>(b)];
}

void GradientBuckets::reset() {
  left_ = layers_in_;
}

}  // namespace conflux::comm
