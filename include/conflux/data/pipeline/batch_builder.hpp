#pragma once
/// @file batch_builder.hpp
/// Assembles a batch (float images + labels) from dataset indices on a trainer's
/// preprocessing threads.

#include <cstdint>
#include <span>
#include <vector>

#include "conflux/core/thread_pool.hpp"
#include "conflux/data/io/dataset.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::data {

/// Builds batches of one dataset split with one transform, on `threads` threads.
class BatchBuilder {
 public:
  /// `dataset` and `transform` must outlive the builder.
  BatchBuilder(const Dataset& dataset, const SampleTransform& transform, int threads);
  /// Augmented training batch of `samples` for `epoch`: images [n, C, H, W] and labels.
  void build_train(std::span<const std::uint32_t> samples, std::uint64_t seed, std::uint32_t epoch,
                   model::Tensor& images, std::vector<model::Label>& labels);
  /// As build_train, into caller-owned memory: samples.size() images and labels.
  void build_train_into(std::span<const std::uint32_t> samples, std::uint64_t seed,
                        std::uint32_t epoch, float* images, model::Label* labels);
  /// Floats per output image.
  std::size_t floats_per_sample() const noexcept { return transform_.output_shape().size(); }
  /// Evaluation batch of the contiguous samples [begin, end).
  void build_eval(std::size_t begin, std::size_t end, model::Tensor& images,
                  std::vector<model::Label>& labels);

 private:
  void shape(std::size_t n, model::Tensor& images, std::vector<model::Label>& labels) const;
  const Dataset& dataset_;
  const SampleTransform& transform_;
  ThreadPool pool_;
};

}  // namespace conflux::data
