// Model construction (shape checks, parameter layout and counts), determinism, batches.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/model_io.hpp"

namespace conflux::model {
namespace {

const std::vector<LayerSpec> kMlp{
    {.type = "flatten"}, {.type = "linear", .out = 512},
    {.type = "relu"},    {.type = "linear", .out = 256},
    {.type = "relu"},    {.type = "linear", .out = 10},
};

const std::vector<LayerSpec> kCifarCnn{
    {.type = "conv2d", .out = 32, .kernel = 3, .stride = 1, .padding = 1},
    {.type = "relu"},
    {.type = "maxpool", .kernel = 2, .stride = 0},
    {.type = "conv2d", .out = 64, .kernel = 3, .stride = 1, .padding = 1},
    {.type = "relu"},
    {.type = "maxpool", .kernel = 2, .stride = 0},
    {.type = "conv2d", .out = 128, .kernel = 3, .stride = 1, .padding = 1},
    {.type = "relu"},
    {.type = "maxpool", .kernel = 2, .stride = 0},
    {.type = "flatten"},
    {.type = "linear", .out = 256},
    {.type = "relu"},
    {.type = "linear", .out = 10},
};

Tensor random_tensor(std::vector<int> shape, std::uint64_t seed) {
  Rng rng{seed, 77};
  Tensor t;
  t.resize(std::move(shape));
  for (float& v : t.data) v = rng.uniform(-1.0f, 1.0f);
  return t;
}

std::string input_error(const std::vector<LayerSpec>& specs, const SampleShape& input,
                        int classes) {
  try {
    Model m(specs, input, classes, 1);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModelModel, MlpParameterLayout) {
  Model m(kMlp, {1, 28, 28}, 10, 1);
  EXPECT_EQ(m.params().size(), 535818u);  // 784*512+512 + 512*256+256 + 256*10+10
  EXPECT_EQ(m.grads().size(), 535818u);
  const auto& infos = m.param_infos();
  ASSERT_EQ(infos.size(), 6u);
  EXPECT_EQ(infos[0].name, "layer1.linear.weight");
  EXPECT_EQ(infos[0].shape, std::vector<int>({512, 784}));
  EXPECT_EQ(infos[0].offset, 0u);
  EXPECT_EQ(infos[1].name, "layer1.linear.bias");
  EXPECT_EQ(infos[1].shape, std::vector<int>({512}));
  EXPECT_EQ(infos[1].offset, 784u * 512u);
  EXPECT_EQ(infos[5].name, "layer5.linear.bias");
  EXPECT_EQ(infos[5].offset + infos[5].size, 535818u);
  for (std::size_t i = 1; i < infos.size(); ++i)
    EXPECT_EQ(infos[i].offset, infos[i - 1].offset + infos[i - 1].size);
  const std::vector<std::string> summary = m.summary();
  ASSERT_EQ(summary.size(), 6u);
  EXPECT_EQ(summary[0], "flatten : [784] (0 params)");
  EXPECT_EQ(summary[1], "linear 784->512 : [512] (401920 params)");
  EXPECT_EQ(summary[5], "linear 256->10 : [10] (2570 params)");
}

TEST(ModelModel, CifarCnnParameterCount) {
  Model m(kCifarCnn, {3, 32, 32}, 10, 1);
  // conv 3*32*9+32 = 896, conv 32*64*9+64 = 18496, conv 64*128*9+128 = 73856,
  // linear 2048*256+256 = 524544, linear 256*10+10 = 2570.
  EXPECT_EQ(m.params().size(), 620362u);
  const std::vector<std::string> summary = m.summary();
  EXPECT_EQ(summary[0], "conv2d 3->32 k3 p1 : [32,32,32] (896 params)");
  EXPECT_EQ(summary[2], "maxpool k2 s2 : [32,16,16] (0 params)");
  EXPECT_EQ(summary[8], "maxpool k2 s2 : [128,4,4] (0 params)");
  EXPECT_EQ(summary[9], "flatten : [2048] (0 params)");
  EXPECT_EQ(m.param_infos()[0].name, "layer0.conv2d.weight");
  EXPECT_EQ(m.param_infos()[0].shape, std::vector<int>({32, 3, 3, 3}));
  const Tensor x = random_tensor({2, 3, 32, 32}, 1);
  const Tensor& logits = m.forward(x);
  EXPECT_EQ(logits.shape, std::vector<int>({2, 10}));
}

TEST(ModelFootprint, ParameterCountsAreTheModels) {
  for (const auto& [specs, input] :
       {std::pair{kMlp, SampleShape{1, 28, 28}}, std::pair{kCifarCnn, SampleShape{3, 32, 32}}}) {
    const ModelFootprint footprint = Model::footprint(specs, input, 10);
    const Model model(specs, input, 10, 1);
    EXPECT_EQ(footprint.params(), model.params().size());
    ASSERT_EQ(footprint.layers.size(), specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(footprint.layers[i].type, specs[i].type);
      EXPECT_NE(model.summary()[i].find(fmt::format("({} params)", footprint.layers[i].params)),
                std::string::npos)
          << model.summary()[i];
    }
  }
}

// oneDNN's convolutions share one scratch: the largest blocked input (channels padded to 16),
// two blocked output gradients and the gated one, per sample.
TEST(ModelFootprint, OnednnScratchIsCounted) {
  const ModelFootprint im2col = Model::footprint(kCifarCnn, {3, 32, 32}, 10);
  const ModelFootprint onednn =
      Model::footprint(kCifarCnn, {3, 32, 32}, 10, {.conv = ConvKernels::kOnednn});
  EXPECT_EQ(im2col.scratch_floats, 0u);
  // Input: 3 -> 16 channels of 32x32; outputs: 32 channels of 32x32 (the first conv's).
  EXPECT_EQ(onednn.scratch_floats, 16u * 1024 + 2 * 32 * 1024 + 32 * 1024);
  EXPECT_DOUBLE_EQ(onednn.bytes(8) - im2col.bytes(8), 8.0 * 4 * onednn.scratch_floats);
}

TEST(ModelFootprint, BytesCountParamsThreeTimesAndActivationsWithTheirGradients) {
  const ModelFootprint footprint = Model::footprint(kMlp, {1, 28, 28}, 10);
  // Per sample: flatten's 784 outputs (no gradient: nothing below the first linear layer needs
  // one), 512 + 512 + 256 + 256 with their gradients, the 10 logits once.
  EXPECT_EQ(footprint.layers[0].activation_floats, 784u);
  EXPECT_EQ(footprint.layers[1].activation_floats, 1024u);
  EXPECT_EQ(footprint.layers[5].activation_floats, 10u);
  EXPECT_DOUBLE_EQ(footprint.bytes(64), 4.0 * (3 * 535818 + (784 + 2 * 1536 + 10) * 64));
  EXPECT_EQ(footprint.largest(64), 1u);  // 784x512
}

TEST(ModelFootprint, HugeModelIsEstimatedWithoutAllocating) {
  // 1.1e12 parameters: a Model would throw std::bad_alloc; the estimate allocates nothing.
  const std::vector<LayerSpec> huge{{.type = "flatten"}, {.type = "linear", .out = 1 << 20},
                                    {.type = "relu"},    {.type = "linear", .out = 1 << 20},
                                    {.type = "relu"},    {.type = "linear", .out = 10}};
  const ModelFootprint footprint = Model::footprint(huge, {1, 28, 28}, 10);
  const std::size_t m = std::size_t{1} << 20;
  EXPECT_EQ(footprint.layers[3].params, m * m + m);
  EXPECT_EQ(footprint.params(), (784 * m + m) + (m * m + m) + (10 * m + 10));
  EXPECT_EQ(footprint.largest(64), 3u);
  EXPECT_GT(footprint.bytes(64), 12.0 * (std::size_t{1} << 40));
  // The same shape checks as the constructor.
  EXPECT_THROW(Model::footprint({{.type = "linear", .out = 10}}, {1, 28, 28}, 10), InputError);
  EXPECT_THROW(Model::footprint(huge, {1, 28, 28}, 5), InputError);
}

TEST(ModelModel, FlattenBeyondAnIntIsAShapeError) {
  // 4096 x 1024 x 1024 features would wrap to 0 as an int.
  EXPECT_EQ(
      input_error({{.type = "flatten"}, {.type = "linear", .out = 10}}, {4096, 1024, 1024}, 10),
      "layer 0 (flatten) flattens [4096,1024,1024] into 4294967296 features, more than the "
      "2147483647 a tensor dimension holds");
}

TEST(ModelModel, ShapeErrorsNameTheLayer) {
  std::vector<LayerSpec> no_flatten{
      {.type = "conv2d", .out = 64, .kernel = 3, .stride = 1, .padding = 1},
      {.type = "relu"},
      {.type = "maxpool", .kernel = 2, .stride = 0},
      {.type = "linear", .out = 10},
  };
  EXPECT_EQ(input_error(no_flatten, {3, 16, 16}, 10),
            "layer 3 (linear) expects a feature vector but gets [64,8,8]; add a flatten layer");
  EXPECT_EQ(input_error({{.type = "conv2d", .out = 4}}, {784}, 10),
            "layer 0 (conv2d) expects an image [C,H,W] but gets [784]");
  EXPECT_EQ(input_error({{.type = "flatten"}, {.type = "linear", .out = 20}}, {1, 28, 28}, 10),
            "model output is [20] but the dataset has 10 classes");
  EXPECT_EQ(input_error({{.type = "relu"}}, {1, 28, 28}, 10),
            "model output is [1,28,28] but the dataset has 10 classes");
  const std::string bad_spec =
      input_error({{.type = "flatten"}, {.type = "linear", .out = 0}}, {4}, 10);
  EXPECT_EQ(bad_spec.rfind("layer 1 (", 0), 0u) << bad_spec;
  const std::string unknown = input_error({{.type = "softmax"}}, {4}, 4);
  EXPECT_EQ(unknown.rfind("layer 0 (softmax): unknown layer type 'softmax'", 0), 0u) << unknown;
  EXPECT_THROW(Model({}, {4}, 4, 1), InputError);
  EXPECT_THROW(Model({{.type = "linear", .out = 4}}, {4}, 0, 1), InputError);
  EXPECT_THROW(Model({{.type = "linear", .out = 4}}, {0}, 4, 1), InputError);
}

TEST(ModelModel, ForwardRejectsWrongInputShape) {
  Model m(kMlp, {1, 28, 28}, 10, 1);
  const Tensor flat = random_tensor({4, 784}, 1);
  const Tensor narrow = random_tensor({4, 1, 28, 27}, 1);
  EXPECT_THROW(m.forward(flat), InputError);
  EXPECT_THROW(m.forward(narrow), InputError);
}

TEST(ModelModel, InitIsDeterministicPerSeed) {
  Model a(kCifarCnn, {3, 32, 32}, 10, 42);
  Model b(kCifarCnn, {3, 32, 32}, 10, 42);
  Model c(kCifarCnn, {3, 32, 32}, 10, 43);
  EXPECT_EQ(weights_digest(a), weights_digest(b));
  EXPECT_NE(weights_digest(a), weights_digest(c));
  EXPECT_TRUE(std::equal(a.params().begin(), a.params().end(), b.params().begin()));
  // PyTorch bounds: 1/sqrt(fan_in), fan_in = C*k*k for conv and in-features for linear.
  for (const ParamInfo& info : a.param_infos()) {
    const int fan_in =
        info.shape.size() == 1 ? 0 : static_cast<int>(Tensor::count_of(info.shape) / info.shape[0]);
    if (fan_in == 0) continue;
    const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
    float largest = 0.0f;
    for (std::size_t i = 0; i < info.size; ++i)
      largest = std::max(largest, std::abs(a.params()[info.offset + i]));
    EXPECT_LE(largest, bound) << info.name;
    EXPECT_GT(largest, 0.9f * bound) << info.name;  // spans the range, not e.g. all zero
  }
}

TEST(ModelModel, BatchedForwardEqualsPerSample) {
  Model m(kCifarCnn, {3, 32, 32}, 10, 5);
  const Tensor batch = random_tensor({3, 3, 32, 32}, 9);
  const std::vector<float> logits = m.forward(batch).data;
  for (int i = 0; i < 3; ++i) {
    Tensor one;
    one.resize({1, 3, 32, 32});
    std::copy_n(batch.data.begin() + i * one.size(), one.size(), one.data.begin());
    const Tensor& l = m.forward(one);
    for (int k = 0; k < 10; ++k) EXPECT_NEAR(l.data[k], logits[i * 10 + k], 1e-5) << i;
  }
}

TEST(ModelModel, EmptyBatchGivesZeroGradients) {
  Model m(kCifarCnn, {3, 32, 32}, 10, 5);
  const std::vector<Label> labels{1, 2};
  const Tensor batch = random_tensor({2, 3, 32, 32}, 3);  // must outlive backward()
  Tensor grad;
  softmax_cross_entropy(m.forward(batch), labels, 0.5f, &grad);
  m.backward(grad);
  EXPECT_TRUE(std::ranges::any_of(m.grads(), [](float g) { return g != 0.0f; }));

  Tensor empty;
  empty.resize({0, 3, 32, 32});
  const Tensor& logits = m.forward(empty);
  EXPECT_EQ(logits.shape, std::vector<int>({0, 10}));
  const LossResult r = softmax_cross_entropy(logits, {}, 1.0f, &grad);
  EXPECT_EQ(r.loss_sum, 0.0);
  m.backward(grad);
  EXPECT_TRUE(std::ranges::all_of(m.grads(), [](float g) { return g == 0.0f; }));
}

TEST(ModelModel, BackwardIsDeterministicAndMoveKeepsBindings) {
  Model a(kCifarCnn, {3, 32, 32}, 10, 8);
  const Tensor x = random_tensor({4, 3, 32, 32}, 4);
  const std::vector<Label> labels{0, 3, 9, 3};
  Tensor grad;
  softmax_cross_entropy(a.forward(x), labels, 0.25f, &grad);
  a.backward(grad);
  const std::vector<float> first(a.grads().begin(), a.grads().end());

  Model b = std::move(a);  // layers keep spans into the moved buffers
  softmax_cross_entropy(b.forward(x), labels, 0.25f, &grad);
  b.backward(grad);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), b.grads().begin()));
}

TEST(ModelModel, LossDecreasesWithSgdSteps) {
  // A tiny learning problem: the end-to-end wiring (forward, loss, backward, update) works.
  Model m({{.type = "flatten"},
           {.type = "linear", .out = 16},
           {.type = "relu"},
           {.type = "linear", .out = 3}},
          {2, 2, 2}, 3, 1);
  const Tensor x = random_tensor({6, 2, 2, 2}, 2);
  const std::vector<Label> labels{0, 1, 2, 0, 1, 2};
  Tensor grad;
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 200; ++step) {
    const LossResult r = softmax_cross_entropy(m.forward(x), labels, 1.0f / 6, &grad);
    if (step == 0) first = r.loss_sum;
    last = r.loss_sum;
    m.backward(grad);
    for (std::size_t i = 0; i < m.params().size(); ++i) m.params()[i] -= 0.5f * m.grads()[i];
  }
  EXPECT_LT(last, 0.1 * first);
}

}  // namespace
}  // namespace conflux::model
