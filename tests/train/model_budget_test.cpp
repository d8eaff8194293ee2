// check_model_memory: the model's estimated memory against limits.memory_mb and
// train.max_model_memory_mb, before anything is allocated, naming the largest layer.

#include "conflux/train/model_budget.hpp"

#include <gtest/gtest.h>

#include "../support/config_text.hpp"
#include "../support/temp_dir.hpp"
#include "conflux/model/model.hpp"

namespace conflux::train {
namespace {

using testing::expect_input_error;

// MNIST, flatten then linear(hidden), relu, linear(hidden), relu, linear(10); 2 trainers.
std::string mlp(int hidden) {
  return fmt::format(R"(
[data]
dataset = "mnist"
[cluster]
trainers = 2
[train]
batch_size = 128
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = {0}
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
out = {0}
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
out = 10
)",
                     hidden);
}

Config load(const std::string& text, std::vector<std::string> overrides = {}) {
  return load_config_string(text, "m.toml",
                            ConfigSources{std::move(overrides), "", "20260101-000000"});
}

void check(const Config& config) {
  check_model_memory(config, expected_model_input(config));
}

TEST(ModelBudget, InputShapeFollowsTheDatasetAndTransform) {
  const Config mnist = load(testing::kMinimalConfig, {"transform.pad=2", "transform.crop=24"});
  EXPECT_EQ(expected_model_input(mnist).shape, (model::SampleShape{1, 24, 24}));
  EXPECT_EQ(expected_model_input(mnist).num_classes, 10);
  const Config cifar = load(testing::kMinimalConfig, {"data.dataset=cifar10"});
  EXPECT_EQ(expected_model_input(cifar).shape, (model::SampleShape{3, 32, 32}));
  expect_input_error(
      [&] { expected_model_input(load(testing::kMinimalConfig, {"transform.crop=40"})); },
      {"--set transform.crop=40", "transform.crop = 40 is larger"});
}

TEST(ModelBudget, ShippedAndSmallModelsPass) {
  EXPECT_NO_THROW(check(load_config_file("configs/mnist_mlp.toml", {})));
  EXPECT_NO_THROW(check(load_config_file("configs/cifar10_cnn.toml", {})));
  EXPECT_NO_THROW(check(load(mlp(512))));
}

TEST(ModelBudget, HugeModelIsRefusedNamingItsLargestLayer) {
  expect_input_error(
      [&] { check(load(mlp(1 << 20))); },
      {"m.toml:8:1: model.layers: the model needs about ", "TiB per trainer",
       "1100346294282 parameters", "activations of 64 samples",
       "more than the 64.0 GiB that train.max_model_memory_mb = 65536 (default) allows",
       "largest layer is model.layers[3] (linear, 1099512676352 parameters, 12.0 TiB)"});
  // 0 switches the bound off.
  EXPECT_NO_THROW(check(load(mlp(1 << 20), {"train.max_model_memory_mb=0"})));
}

TEST(ModelBudget, TrainersMemoryLimitIsTheBound) {
  // 784x8192 + 8192x8192 + 8192x10 weights: 73.6 M parameters, 0.8 GiB with gradients and
  // momentum.
  const std::string text = mlp(8192);
  EXPECT_NO_THROW(check(load(text)));
  expect_input_error([&] { check(load(text, {"limits.memory_mb=512"})); },
                     {"more than the 512.0 MiB that limits.memory_mb = 512 (--set "
                      "limits.memory_mb=512) allows",
                      "model.layers[3] (linear, 67117056 parameters"});
  EXPECT_NO_THROW(check(load(text, {"limits.memory_mb=512", "limits.ranks=workers"})));
  expect_input_error([&] { check(load(text, {"train.max_model_memory_mb=100"})); },
                     {"train.max_model_memory_mb = 100 (--set train.max_model_memory_mb=100)"});
}

TEST(ModelBudget, AdamsSecondMomentIsCounted) {
  // 73.6 M parameters: 842 MiB with SGD's one buffer, 1123 MiB with Adam's two.
  const std::string text = mlp(8192);
  EXPECT_NO_THROW(check(load(text, {"train.max_model_memory_mb=1000"})));
  expect_input_error(
      [&] {
        check(load(text, {"train.max_model_memory_mb=1000", "train.optimizer=adamw"}));
      },
      {"each with a gradient and 2 optimiser buffer(s)", "train.max_model_memory_mb = 1000"});
}

TEST(ModelBudget, ShapeErrorsNameModelLayers) {
  std::string relu = testing::kMinimalConfig;
  relu.replace(relu.find("\"flatten\""), 9, "\"relu\"");
  expect_input_error(
      [&] { check(load(relu)); },
      {"m.toml:5:1: model.layers: layer 1 (linear at m.toml:7:1) expects a feature vector but "
       "gets [1,28,28]"});
  std::string five = testing::kMinimalConfig;
  five.replace(five.find("out = 10"), 8, "out = 5");
  expect_input_error([&] { check(load(five)); },
                     {"model.layers: model output is [5] but the dataset has 10 classes"});
}

TEST(ModelBudget, LargestBatchFollowsTheSplit) {
  EXPECT_EQ(largest_trainer_batch(load(mlp(8), {"train.batch_size=129"})), 65u);
  EXPECT_EQ(largest_trainer_batch(load(mlp(8), {"cluster.trainers=1"})), 128u);
}

}  // namespace
}  // namespace conflux::train
