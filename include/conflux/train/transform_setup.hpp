#pragma once
/// @file transform_setup.hpp
/// Builds the sample transform a config describes (loading the user plugin if one is named),
/// the same way on trainers and workers, so that both build identical batches.

#include "conflux/config/config.hpp"
#include "conflux/data/io/sample_source.hpp"
#include "conflux/data/transform/transforms.hpp"

namespace conflux::train {

/// The [transform] section as transform options; loads transform.plugin. InputError naming
/// the key and where it was set when the plugin cannot be loaded.
data::TransformOptions transform_options(const Config& config);

/// The training/evaluation transform for images of `dataset`; InputError naming the config
/// key when the options do not fit the images.
data::SampleTransform make_transform(const Config& config, const data::SampleSource& source);

/// The shape make_transform's output has for images of `image`, without loading the plugin;
/// the same InputErrors otherwise.
data::ImageShape transformed_shape(const Config& config, data::ImageShape image);

}  // namespace conflux::train
