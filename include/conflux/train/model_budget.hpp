#pragma once
/// @file model_budget.hpp
/// The model's memory checked against a bound before anything is allocated, so that a model
/// that cannot fit is an InputError naming its largest layer (in `conflux config check` and
/// at start-up) instead of std::bad_alloc in the middle of construction.

#include <optional>
#include <string>

#include "conflux/config/config.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::train {

/// What the model is built for: its per-sample input and the dataset's classes.
struct ModelInput {
  model::SampleShape shape;  ///< {C, H, W} after the transform
  int num_classes = 0;
};

/// The model input `config` implies before its data is loaded: the catalog's image shape of
/// data.dataset through the transform. InputError (at the transform key) when it does not fit.
ModelInput expected_model_input(const Config& config);

/// The most memory a trainer's model may take and the key that sets it.
struct MemoryBound {
  double bytes = 0;
  std::string source;  ///< e.g. "limits.memory_mb = 512 (file.toml:30:13)"
};

/// The smaller of limits.memory_mb (when the limits apply to trainers) and
/// train.max_model_memory_mb; none when both are 0.
std::optional<MemoryBound> model_memory_bound(const Config& config);

/// Samples of the largest batch any trainer gets (train.batch_size / trainers, or K-Reduce's
/// unequal split).
std::size_t largest_trainer_batch(const Config& config);

/// InputError at model.layers when the model of `config` on `input` does not build (shapes,
/// classes) or its estimated memory (model::Model::footprint) exceeds model_memory_bound();
/// the message names the largest layer as model.layers[i] with its type and parameter count.
void check_model_memory(const Config& config, const ModelInput& input);

}  // namespace conflux::train
