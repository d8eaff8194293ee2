#include "conflux/train/model_budget.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "conflux/core/byte_size.hpp"
#include "conflux/core/error.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/io/open_source.hpp"
#include "conflux/data/pipeline/epoch_plan.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/optimizer.hpp"
#include "conflux/train/model_setup.hpp"
#include "conflux/train/transform_setup.hpp"

namespace conflux::train {

namespace {

constexpr double kMiB = 1 << 20;

// The footprint of the model `config` builds on `input`; shape errors at model.layers, as the
// trainer reports them.
model::ModelFootprint footprint_of(const Config& config, const ModelInput& input) {
  try {
    model::ModelFootprint footprint = model::Model::footprint(
        config.layers(), input.shape, input.num_classes, layer_options(config));
    const std::size_t buffers = model::optimizer_state_buffers(config.train().optimizer);
    for (model::LayerFootprint& layer : footprint.layers) layer.state_buffers = buffers;
    return footprint;
  } catch (const InputError& e) {
    CONFLUX_INPUT_ERROR("{}: model.layers: {}", config.where("model.layers"), e.what());
  }
}

}  // namespace

ModelInput expected_model_input(const Config& config) {
  const auto& names = data::known_dataset_names();
  if (std::find(names.begin(), names.end(), config.data().dataset) != names.end()) {
    const data::KnownDataset dataset = data::known_dataset(config.data().dataset);
    const data::ImageShape image = transformed_shape(config, dataset.shape);
    return {{image.channels, image.height, image.width}, dataset.num_classes};
  }
  // Your own data: its index says the classes and (for arrays) the shape; nothing is decoded.
  const data::SourceSplits sources = data::open_sources(config.data());
  const data::SourceInfo& info = sources.train->info();
  const data::ImageShape image = transformed_shape(config, info.shape);
  return {{image.channels, image.height, image.width}, info.num_classes};
}

std::optional<MemoryBound> model_memory_bound(const Config& config) {
  std::optional<MemoryBound> bound;
  const auto consider = [&](std::int64_t mib, const std::string& key) {
    if (mib <= 0 || (bound && bound->bytes <= static_cast<double>(mib) * kMiB)) return;
    bound = MemoryBound{static_cast<double>(mib) * kMiB,
                        fmt::format("{} = {} ({})", key, mib, config.where(key))};
  };
  const LimitsSection& limits = config.limits();
  if (limits.ranks == "all" || limits.ranks == "trainers") {
    consider(limits.memory_mb, "limits.memory_mb");
  }
  consider(config.train().max_model_memory_mb, "train.max_model_memory_mb");
  return bound;
}

std::size_t largest_trainer_batch(const Config& config) {
  const data::BatchSplit split(static_cast<std::size_t>(config.train().batch_size),
                               config.cluster().trainers, config.comm().aggregators,
                               static_cast<std::size_t>(config.comm().nonaggregator_batch_size));
  std::size_t largest = 0;
  for (int t = 0; t < split.trainers(); ++t) largest = std::max(largest, split.max_batch(t));
  return largest;
}

void check_model_memory(const Config& config, const ModelInput& input) {
  const model::ModelFootprint footprint = footprint_of(config, input);
  const std::optional<MemoryBound> bound = model_memory_bound(config);
  const std::size_t batch = largest_trainer_batch(config);
  const double bytes = footprint.bytes(batch);
  if (!bound || bytes <= bound->bytes) return;
  const std::size_t i = footprint.largest(batch);
  const model::LayerFootprint& layer = footprint.layers[i];
  CONFLUX_INPUT_ERROR(
      "{}: model.layers: the model needs about {} per trainer ({} parameters, each with a "
      "gradient and {} optimiser buffer(s), and the activations of {} samples), more than the "
      "{} that {} "
      "allows; its largest layer is model.layers[{}] ({}, {} parameters, {}). Make the model "
      "smaller or raise the bound",
      config.where("model.layers"), format_bytes(bytes), footprint.params(), layer.state_buffers,
      batch, format_bytes(bound->bytes), bound->source, i, layer.type, layer.params,
      format_bytes(layer.bytes(batch)));
}

}  // namespace conflux::train
