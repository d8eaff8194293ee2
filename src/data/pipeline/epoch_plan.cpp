#include "conflux/data/pipeline/epoch_plan.hpp"

#include <algorithm>
#include <numeric>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"

namespace conflux::data {

namespace {
constexpr std::uint64_t kPlanStream = 0x706c616e;  // "plan": keeps this stream apart

// Offset of trainer t when `n` samples are shared as evenly as possible by `parts` trainers,
// the first (n mod parts) getting one more.
std::size_t even_offset(std::size_t n, std::size_t parts, std::size_t t) noexcept {
  return t * (n / parts) + std::min(t, n % parts);
}
}  // namespace

BatchSplit::BatchSplit(std::size_t global_batch, int trainers, int aggregators,
                       std::size_t nonaggregator_batch)
    : global_batch_(global_batch),
      trainers_(trainers),
      aggregators_(aggregators == 0 ? trainers : aggregators),
      nonaggregator_batch_(nonaggregator_batch) {
  CONFLUX_CHECK(global_batch > 0 && trainers > 0, "batch split needs a batch and a trainer");
  CONFLUX_CHECK(aggregators_ > 0 && aggregators_ <= trainers,
                "batch split: {} aggregators among {} trainers", aggregators, trainers);
  const auto w = static_cast<std::size_t>(trainers_), k = static_cast<std::size_t>(aggregators_);
  if (k == w) nonaggregator_batch_ = 0;  // no non-aggregators: nothing to size
  if (nonaggregator_batch_ == 0) return;
  CONFLUX_CHECK(
      (w - k) * nonaggregator_batch_ + k <= global_batch_,
      "batch split: {} non-aggregators x {} samples leave fewer than {} for the aggregators of "
      "a {}-sample step",
      w - k, nonaggregator_batch_, k, global_batch_);
  // Bn equal to what equal batches give every non-aggregator is the equal split (today's plan,
  // short last step included).
  const std::size_t base = global_batch_ / w, extra = global_batch_ % w;
  if (nonaggregator_batch_ == base && extra <= k) nonaggregator_batch_ = 0;
}

std::size_t BatchSplit::full_batch(int trainer) const noexcept {
  const BatchRange r = within_step(global_batch_, trainer);
  return r.size();
}

BatchRange BatchSplit::within_step(std::size_t n, int trainer) const noexcept {
  const auto t = static_cast<std::size_t>(trainer);
  const auto w = static_cast<std::size_t>(trainers_), k = static_cast<std::size_t>(aggregators_);
  if (nonaggregator_batch_ == 0) {
    return {even_offset(n, w, t), even_offset(n, w, t + 1)};
  }
  // Offset of trainer t in a full step: the aggregators' shares, then Bn per non-aggregator.
  const std::size_t aggregator_samples = global_batch_ - (w - k) * nonaggregator_batch_;
  const auto full_offset = [&](std::size_t i) {
    return i <= k ? even_offset(aggregator_samples, k, i)
                  : aggregator_samples + (i - k) * nonaggregator_batch_;
  };
  // A short step: boundaries scaled by n / B and rounded down keep every batch contiguous, in
  // trainer order and no larger than its full-step size.
  const auto offset = [&](std::size_t i) { return n * full_offset(i) / global_batch_; };
  return {offset(t), offset(t + 1)};
}

EpochPlan::EpochPlan(std::uint64_t seed, std::uint32_t epoch, std::size_t dataset_size,
                     std::size_t global_batch, int trainers)
    : EpochPlan(seed, epoch, dataset_size, BatchSplit(global_batch, trainers)) {}

EpochPlan::EpochPlan(std::uint64_t seed, std::uint32_t epoch, std::size_t dataset_size,
                     const BatchSplit& split)
    : order_(dataset_size), split_(split) {
  CONFLUX_CHECK(dataset_size <= UINT32_MAX, "dataset of {} samples is too large", dataset_size);
  std::iota(order_.begin(), order_.end(), 0u);
  // Fisher-Yates with a generator keyed by (seed, epoch): the same order on every rank.
  Rng rng{seed, kPlanStream, epoch};
  for (std::size_t i = dataset_size; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  steps_ = (dataset_size + split_.global_batch() - 1) / split_.global_batch();
}

std::size_t EpochPlan::step_samples(std::size_t step) const noexcept {
  return step_range(step).size();
}

BatchRange EpochPlan::step_range(std::size_t step) const noexcept {
  const std::size_t b = split_.global_batch();
  const std::size_t begin = std::min(step * b, order_.size());
  return {begin, std::min(begin + b, order_.size())};
}

BatchRange EpochPlan::range(std::size_t step, int trainer) const noexcept {
  const BatchRange in_step = split_.within_step(step_samples(step), trainer);
  const std::size_t begin = step * split_.global_batch();
  return {begin + in_step.begin, begin + in_step.end};
}

std::span<const std::uint32_t> EpochPlan::samples(std::size_t step, int trainer) const noexcept {
  return samples(range(step, trainer));
}

std::span<const std::uint32_t> EpochPlan::samples(BatchRange range) const noexcept {
  return std::span<const std::uint32_t>(order_).subspan(range.begin, range.size());
}

}  // namespace conflux::data
