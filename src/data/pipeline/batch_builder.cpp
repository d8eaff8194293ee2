#include "conflux/data/pipeline/batch_builder.hpp"

namespace conflux::data {

BatchBuilder::BatchBuilder(const Dataset& dataset, const SampleTransform& transform, int threads)
    : dataset_(dataset), transform_(transform), pool_(threads) {}

void BatchBuilder::shape(std::size_t n, model::Tensor& images,
                         std::vector<model::Label>& labels) const {
  const ImageShape out = transform_.output_shape();
  images.resize({static_cast<int>(n), out.channels, out.height, out.width});
  labels.resize(n);
}

void BatchBuilder::build_train(std::span<const std::uint32_t> samples, std::uint64_t seed,
                               std::uint32_t epoch, model::Tensor& images,
                               std::vector<model::Label>& labels) {
  shape(samples.size(), images, labels);
  build_train_into(samples, seed, epoch, images.data.data(), labels.data());
}

void BatchBuilder::build_train_into(std::span<const std::uint32_t> samples, std::uint64_t seed,
                                    std::uint32_t epoch, float* images, model::Label* labels) {
  const std::size_t stride = transform_.output_shape().size();
  pool_.parallel_for(samples.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t index = samples[i];
      transform_.train({dataset_.shape, dataset_.image(index)}, seed, epoch, index,
                       images + i * stride);
      labels[i] = dataset_.labels[index];
    }
  });
}

void BatchBuilder::build_eval(std::size_t begin, std::size_t end, model::Tensor& images,
                              std::vector<model::Label>& labels) {
  shape(end - begin, images, labels);
  const std::size_t stride = transform_.output_shape().size();
  pool_.parallel_for(end - begin, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      transform_.eval({dataset_.shape, dataset_.image(begin + i)}, images.data.data() + i * stride);
      labels[i] = dataset_.labels[begin + i];
    }
  });
}

}  // namespace conflux::data
