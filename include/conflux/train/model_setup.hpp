#pragma once
/// @file model_setup.hpp
/// The model a run starts from: the layers of model.layers on the transformed input, with a
/// seeded init or the weights of train.init_from. One place for trainers and `conflux eval`.

#include <filesystem>
#include <string>

#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/model.hpp"

namespace conflux::train {

/// How the layers of `config`'s model compute: train.conv_kernels (auto: oneDNN unless the
/// results must be portable) and cluster.blas_threads.
model::LayerOptions layer_options(const Config& config);

/// The model of `config` for the output of `transform` and `num_classes` classes, initialised
/// from run.seed, then from train.init_from when set (said on `log` when not null). InputError
/// naming the key and where it was set when the layers do not fit or the file does not match.
model::Model make_model(const Config& config, const data::SampleTransform& transform,
                        int num_classes, const Logger* log);

/// Loads the weights of model file `path` into `model`; InputError starting with `origin`
/// (what named the file: "FILE:LINE:COL: train.init_from", "conflux eval --model") when the file
/// does not match. Returns the log line saying what was loaded.
std::string load_weights(const std::string& origin, const std::filesystem::path& path,
                         model::Model& model, bool reset_output);

}  // namespace conflux::train
