#include "conflux/data/epoch_plan.hpp"

#include <algorithm>
#include <numeric>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"

namespace conflux::data {

namespace {
constexpr std::uint64_t kPlanStream = 0x706c616e;  // "plan": keeps this stream apart
}

EpochPlan::EpochPlan(std::uint64_t seed, std::uint32_t epoch, std::size_t dataset_size,
                     std::size_t global_batch, int trainers)
    : order_(dataset_size), global_batch_(global_batch), trainers_(trainers) {
  CONFLUX_CHECK(global_batch > 0 && trainers > 0, "epoch plan needs a batch and a trainer");
  CONFLUX_CHECK(dataset_size <= UINT32_MAX, "dataset of {} samples is too large", dataset_size);
  std::iota(order_.begin(), order_.end(), 0u);
  // Fisher-Yates with a generator keyed by (seed, epoch): the same order on every rank.
  Rng rng{seed, kPlanStream, epoch};
  for (std::size_t i = dataset_size; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  steps_ = (dataset_size + global_batch - 1) / global_batch;
}

std::size_t EpochPlan::step_samples(std::size_t step) const noexcept {
  const std::size_t begin = step * global_batch_;
  return std::min(global_batch_, order_.size() - std::min(begin, order_.size()));
}

BatchRange EpochPlan::range(std::size_t step, int trainer) const noexcept {
  // Split the step's samples as evenly as possible: the first (n mod T) trainers get one more.
  const std::size_t n = step_samples(step);
  const auto t = static_cast<std::size_t>(trainer);
  const auto trainers = static_cast<std::size_t>(trainers_);
  const std::size_t base = n / trainers, extra = n % trainers;
  const std::size_t offset = t * base + std::min(t, extra);
  const std::size_t begin = step * global_batch_ + offset;
  return {begin, begin + base + (t < extra ? 1 : 0)};
}

std::span<const std::uint32_t> EpochPlan::samples(std::size_t step, int trainer) const noexcept {
  const BatchRange r = range(step, trainer);
  return std::span<const std::uint32_t>(order_).subspan(r.begin, r.size());
}

}  // namespace conflux::data
