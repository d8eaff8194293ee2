#include "conflux/train/evaluation.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "conflux/comm/agreement.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/model/model_io.hpp"
#include "conflux/train/model_setup.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

EvalResult evaluate_split(const Config& config, const data::SampleSource& split,
                          const data::SampleTransform& transform, const comm::Communicator& comm,
                          const Logger* log, const EvalForward& forward,
                          std::pmr::memory_resource* pixel_memory) {
  const auto r = static_cast<std::size_t>(comm.rank());
  const auto n = static_cast<std::size_t>(comm.size());
  const std::size_t begin = split.size() * r / n;
  const std::size_t end = split.size() * (r + 1) / n;
  constexpr std::size_t kEvalBatch = 500;
  data::BatchBuilder builder(split, transform, config.cluster().preprocess_threads,
                             sample_decoding(config, log));
  data::Batch batch;
  if (pixel_memory != nullptr) {
    batch.encoding = data::ImageEncoding::kPixels;
    batch.pixels = data::PixelBuffer(pixel_memory);
  }
  std::array<double, 3> sums{0, 0, 0};  // loss, correct, skipped
  for (std::size_t lo = begin; lo < end; lo += kEvalBatch) {
    const std::size_t hi = std::min(end, lo + kEvalBatch);
    if (pixel_memory != nullptr) {
      builder.build_eval_pixels(lo, hi, batch.pixels, batch.labels);
    } else {
      builder.build_eval(lo, hi, batch.images, batch.labels);
    }
    const model::LossResult result = forward(batch);
    sums[0] += result.loss_sum;
    sums[1] += result.correct;
    sums[2] += result.skipped;
  }
  comm.allreduce_sum(sums, std::chrono::duration<double>(config.cluster().peer_timeout_s));
  // Skipped samples do not count; max() keeps a split of only corrupt files finite.
  const double samples = static_cast<double>(split.size()) - sums[2];
  const double denominator = std::max(1.0, samples);
  return {sums[0] / denominator, sums[1] / denominator, samples};
}

EvalResult run_eval_job(const Config& config, const comm::Communicator& world, const Logger& log,
                        const EvalJob& job) {
  std::optional<data::SourceSplits> data;
  std::optional<data::SampleTransform> transform;
  std::optional<model::Model> model;
  std::string loaded;
  // Every rank opens the data and the weights; a bad file fails them all alike (exit 2).
  comm::run_agreed(world, "loading the data and the weights", [&] {
    data.emplace(open_training_data(config));
    transform.emplace(make_transform(config, *data->train));
    // The config's own init (train.init_from included) is replaced by the file's weights.
    model.emplace(make_model(config, *transform, data->train->info().num_classes, nullptr));
    loaded = load_weights("conflux eval --model", job.model_file, *model, /*reset_output=*/false);
  });
  if (world.rank() == 0) log.info("{} (weights digest {})", loaded, model::weights_digest(*model));
  const data::SampleSource& split = job.train_split ? *data->train : *data->test;
  return evaluate_split(config, split, *transform, world, world.rank() == 0 ? &log : nullptr,
                        [&](const data::Batch& batch) {
                          return model::softmax_cross_entropy(model->forward(batch.images),
                                                              batch.labels, 0, nullptr);
                        });
}

}  // namespace conflux::train
