#pragma once
/// @file device_model_cases.hpp
/// The models and batches the device-model tests run on both devices: on the host executor
/// (device_model_test.cpp, everywhere) and on a GPU (cuda_model_test.cpp).

#include <cstdint>
#include <span>
#include <vector>

#include "conflux/config/layer_spec.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/tensor.hpp"
#include "gpu_test_support.hpp"

namespace conflux::gpu::testing {

using model::Tensor;

// Every layer type, channels-last activations and fused ReLUs (conv, batchnorm, add).
inline const std::vector<LayerSpec> kEveryLayer{
    {.type = "conv2d", .out = 6, .kernel = 3, .stride = 1, .padding = 1, .name = "stem"},
    {.type = "batchnorm", .name = "bn"},
    {.type = "relu", .name = "act"},
    {.type = "dropout", .rate = 0.5, .name = "drop2d"},
    {.type = "maxpool", .kernel = 3, .stride = 2, .padding = 1, .name = "pool"},
    {.type = "conv2d", .out = 6, .kernel = 3, .stride = 1, .padding = 1, .name = "c1"},
    {.type = "relu", .name = "r1"},
    {.type = "conv2d", .out = 6, .kernel = 1, .stride = 1, .padding = 0, .name = "c2"},
    {.type = "add", .name = "sum", .inputs = {"c2", "pool"}},
    {.type = "relu", .name = "r2"},
    {.type = "conv2d",
     .out = 4,
     .kernel = 3,
     .stride = 2,
     .padding = 0,
     .name = "proj",
     .inputs = {"r2"}},
    {.type = "avgpool", .kernel = 3, .stride = 2, .name = "avg2", .inputs = {"r2"}},
    {.type = "concat", .name = "cat", .inputs = {"proj", "avg2", "proj"}},
    {.type = "avgpool", .kernel = 2, .stride = 1, .name = "avg"},
    {.type = "globalavgpool", .name = "gap", .inputs = {"avg"}},
    {.type = "dropout", .rate = 0.25, .name = "drop"},
    {.type = "batchnorm", .name = "bn1d"},
    {.type = "linear", .out = 5, .name = "fc"}};

// An MLP with a flatten of an image (channels-last to the CPU's feature order).
inline const std::vector<LayerSpec> kFlattenMlp{
    {.type = "conv2d", .out = 3, .kernel = 3, .padding = 1},
    {.type = "flatten"},
    {.type = "linear", .out = 7},
    {.type = "relu"},
    {.type = "linear", .out = 5}};

inline std::vector<float> to_vector(std::span<const float> s) {
  return {s.begin(), s.end()};
}

struct Batch {
  Tensor images;
  std::vector<model::Label> labels;
  std::vector<std::uint32_t> samples;
};

inline Batch random_batch(const model::SampleShape& sample, int n, int classes,
                          std::uint64_t seed) {
  Rng rng{seed, 99};
  Batch b;
  std::vector<int> shape{n};
  shape.insert(shape.end(), sample.begin(), sample.end());
  b.images = tensor(shape, random_floats(Tensor::count_of(shape), rng));
  for (int i = 0; i < n; ++i) {
    b.labels.push_back(static_cast<model::Label>(rng.below(static_cast<std::uint64_t>(classes))));
    b.samples.push_back(static_cast<std::uint32_t>(1000 + 7 * i));
  }
  return b;
}

}  // namespace conflux::gpu::testing
