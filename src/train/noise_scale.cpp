#include "conflux/train/noise_scale.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace conflux::train {

void NoiseScaleEstimator::add(const NoiseStep& s) noexcept {
  const double b = s.small_batch;
  const double big = s.big_batch;
  if (!(b > 0 && big > b) || !std::isfinite(s.small_norm2) || !std::isfinite(s.big_norm2)) return;
  norm2_sum_ += (big * s.big_norm2 - b * s.small_norm2) / (big - b);
  trace_sum_ += (s.small_norm2 - s.big_norm2) / (1.0 / b - 1.0 / big);
  ++steps_;
}

double NoiseScaleEstimator::gradient_norm2() const noexcept {
  return steps_ > 0 ? norm2_sum_ / static_cast<double>(steps_)
                    : std::numeric_limits<double>::quiet_NaN();
}

double NoiseScaleEstimator::trace() const noexcept {
  return steps_ > 0 ? trace_sum_ / static_cast<double>(steps_)
                    : std::numeric_limits<double>::quiet_NaN();
}

double NoiseScaleEstimator::noise_scale() const noexcept {
  const double g = gradient_norm2();
  const double t = trace();
  return g > 0 && t > 0 ? t / g : std::numeric_limits<double>::quiet_NaN();
}

void NoiseScaleMeter::record(double local_sq, std::size_t samples, std::size_t step_samples,
                             bool current, double merged_sq) {
  const double b = static_cast<double>(samples);
  const double big = static_cast<double>(step_samples);
  // |this trainer's mean gradient|^2: the local sum was scaled by 1/B, the mean needs 1/b.
  const double small_norm2 = b > 0 ? local_sq * (big / b) * (big / b) : 0.0;
  std::array<double, 4> sums{small_norm2, b, b * b, current ? 1.0 : 0.0};
  trainers_.allreduce_sum(sums, timeout_);
  const double w = static_cast<double>(trainers_.size());
  // Equal batches: W sum(b^2) = (sum b)^2. The last step of an epoch may split unevenly.
  const bool equal = w * sums[2] == sums[1] * sums[1];
  if (sums[3] != w || !equal || sums[1] != big) return;
  epoch_.add({.small_norm2 = sums[0] / w,
              .big_norm2 = merged_sq,
              .small_batch = sums[1] / w,
              .big_batch = big});
}

}  // namespace conflux::train
