// Fused ReLU (Layer::fuse_relu, Model::fuse_relus): a layer that applies the ReLU after it
// must give bit for bit what the layer followed by a separate ReLU gives, forward and
// backward, and the model must fuse exactly the ReLUs that alone read a fusable layer.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../support/bound_layer.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {
namespace {

using testing::bind_layer;
using testing::BoundLayer;

// Values around zero, with exact zeros and negative zeros, so that the gate's edge is hit.
Tensor signed_tensor(const std::vector<int>& shape, std::uint64_t seed) {
  Tensor t;
  t.resize(shape);
  Rng rng{seed, 3};
  for (std::size_t i = 0; i < t.size(); ++i) {
    const float v = rng.uniform(-1.0f, 1.0f);
    t.data[i] = i % 11 == 0 ? 0.0f : i % 13 == 0 ? -0.0f : v;
  }
  return t;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

struct Case {
  LayerSpec spec;
  SampleShape sample;
  int inputs = 1;
};

// The layer with its ReLU fused against the same layer (same parameters) and a Relu layer.
void check_fused_equals_separate(const Case& c, bool training) {
  Rng rng_a{5, 6}, rng_b{5, 6};
  BoundLayer fused = bind_layer(c.spec, c.sample, rng_a);
  BoundLayer plain = bind_layer(c.spec, c.sample, rng_b);
  ASSERT_TRUE(fused.layer->fuse_relu()) << c.spec.type;
  Relu relu;
  std::vector<int> shape{3};
  shape.insert(shape.end(), c.sample.begin(), c.sample.end());
  std::vector<Tensor> xs;
  for (int k = 0; k < c.inputs; ++k) xs.push_back(signed_tensor(shape, 10 + k));
  std::vector<const Tensor*> ins;
  for (const Tensor& x : xs) ins.push_back(&x);
  const Pass pass{.training = training};

  Tensor y_fused, y_plain, y_relu;
  fused.layer->forward_pass(pass, ins, y_fused);
  plain.layer->forward_pass(pass, ins, y_plain);
  relu.forward(y_plain, y_relu);
  expect_same_bits(y_fused.data, y_relu.data, "forward");

  const Tensor dy = signed_tensor(y_relu.shape, 20);
  Tensor dy_plain;
  relu.backward(y_plain, dy, dy_plain);
  std::vector<Tensor> dx_fused(c.inputs), dx_plain(c.inputs);
  std::vector<Tensor*> g_fused, g_plain;
  for (int k = 0; k < c.inputs; ++k) {
    g_fused.push_back(&dx_fused[k]);
    g_plain.push_back(&dx_plain[k]);
  }
  fused.layer->backward_pass(pass, ins, dy, g_fused);
  plain.layer->backward_pass(pass, ins, dy_plain, g_plain);
  for (int k = 0; k < c.inputs; ++k) expect_same_bits(dx_fused[k].data, dx_plain[k].data, "dx");
  expect_same_bits(fused.grads, plain.grads, "parameter gradients");
  expect_same_bits(fused.buffers, plain.buffers, "running statistics");
}

TEST(FusedRelu, Conv2dEqualsConvThenRelu) {
  check_fused_equals_separate(
      {.spec = {.type = "conv2d", .out = 4, .padding = 1}, .sample = {2, 5, 6}}, false);
  check_fused_equals_separate(
      {.spec = {.type = "conv2d", .out = 3, .kernel = 3, .stride = 2, .padding = 1},
       .sample = {2, 7, 7}},
      false);
}

TEST(FusedRelu, BatchNormEqualsBatchNormThenRelu) {
  for (const bool training : {true, false}) {
    check_fused_equals_separate({.spec = {.type = "batchnorm"}, .sample = {3, 4, 5}}, training);
    check_fused_equals_separate({.spec = {.type = "batchnorm"}, .sample = {6}}, training);
  }
}

TEST(FusedRelu, AddEqualsAddThenRelu) {
  check_fused_equals_separate({.spec = {.type = "add"}, .sample = {2, 3, 3}, .inputs = 2}, true);
  check_fused_equals_separate({.spec = {.type = "add"}, .sample = {5}, .inputs = 3}, true);
}

TEST(FusedRelu, LinearEqualsLinearThenRelu) {
  check_fused_equals_separate({.spec = {.type = "linear", .out = 7}, .sample = {9}}, true);
}

TEST(FusedRelu, OtherLayersDecline) {
  Rng rng{1, 2};
  EXPECT_FALSE(bind_layer({.type = "maxpool", .kernel = 2}, {1, 4, 4}, rng).layer->fuse_relu());
  EXPECT_FALSE(bind_layer({.type = "relu"}, {3}, rng).layer->fuse_relu());
}

// Counts the calls the model makes per layer.
class CallCounter final : public LayerObserver {
 public:
  explicit CallCounter(std::size_t layers) : calls(layers, 0) {}
  void begin(std::size_t index, bool /*backward*/) override { ++calls.at(index); }
  void end(std::size_t /*index*/, bool /*backward*/) override {}
  std::vector<int> calls;
};

// Fused: the ReLU after the conv (its only reader) and after the add. Not fused: the ReLU
// after max-pool (max-pool declines) and the one whose input also feeds the add.
TEST(FusedRelu, TheModelFusesExactlyTheReLUsThatAloneReadAFusableLayer) {
  const std::vector<LayerSpec> specs{
      {.type = "conv2d", .out = 3, .padding = 1},                // 0
      {.type = "relu"},                                          // 1: fused into 0
      {.type = "maxpool", .kernel = 2},                          // 2
      {.type = "relu", .name = "r3"},                            // 3: after maxpool
      {.type = "conv2d", .out = 3, .padding = 1, .name = "c4"},  // 4
      {.type = "relu", .name = "r5", .inputs = {"c4"}},          // 5: c4 also feeds 6
      {.type = "add", .name = "s6", .inputs = {"r5", "c4"}},     // 6
      {.type = "relu", .inputs = {"s6"}},                        // 7: fused into 6
      {.type = "flatten"},                                       // 8
      {.type = "linear", .out = 4}};                             // 9
  Model model(specs, {2, 6, 6}, 4, 7);
  CallCounter counter(specs.size());
  model.set_observer(&counter);
  const Tensor x = signed_tensor({2, 2, 6, 6}, 30);
  const Tensor& logits = model.forward(x, Pass{.training = true});
  model.backward(signed_tensor(logits.shape, 31));
  model.set_observer(nullptr);
  EXPECT_EQ(counter.calls[1], 0);
  EXPECT_EQ(counter.calls[7], 0);
  EXPECT_EQ(counter.calls[3], 2);  // forward and backward
  EXPECT_EQ(counter.calls[5], 2);
  EXPECT_EQ(counter.calls[0], 2);
  EXPECT_EQ(model.summary().size(), specs.size());
}

}  // namespace
}  // namespace conflux::model
