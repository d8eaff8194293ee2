// oneDNN's convolutions (train.conv_kernels = onednn): the same function as the im2col
// convolution within float rounding, forward and backward, with and without a fused ReLU; the
// same bits on every call (the determinism the digests rely on); a whole graph with batch norm
// and skip connections close to its im2col twin; and which kernels a config selects.
// The finite-difference checks of the oneDNN path are in gradient_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../support/bound_layer.hpp"
#include "../support/config_text.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/model.hpp"
#include "conflux/train/model_setup.hpp"

namespace conflux::model {
namespace {

using testing::bind_layer;
using testing::BoundLayer;

const LayerOptions kOnednn{.conv = ConvKernels::kOnednn};

Tensor uniform_tensor(const std::vector<int>& shape, std::uint64_t seed) {
  Tensor t;
  t.resize(shape);
  Rng rng{seed, 11};
  for (float& v : t.data) v = rng.uniform(-1.0f, 1.0f);
  return t;
}

// |a - b| <= 1e-5 + 1e-4 |b| for every element: float rounding of sums of up to a few
// hundred products in another order, not a wrong index (which is off by O(1)).
void expect_close(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - b[i]) <= 1e-5f + 1e-4f * std::fabs(b[i]))) {
      if (bad++ < 3) ADD_FAILURE() << what << "[" << i << "]: " << a[i] << " vs " << b[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

struct Geometry {
  LayerSpec spec;
  std::vector<int> input;  // [N, C, H, W]
};

const std::vector<Geometry> kGeometries{
    {{.type = "conv2d", .out = 32, .kernel = 3, .stride = 1, .padding = 1}, {4, 3, 12, 12}},
    {{.type = "conv2d", .out = 16, .kernel = 3, .stride = 1, .padding = 1}, {3, 16, 8, 8}},
    {{.type = "conv2d", .out = 24, .kernel = 3, .stride = 2, .padding = 1}, {2, 20, 9, 9}},
    {{.type = "conv2d", .out = 8, .kernel = 1, .stride = 2, .padding = 0}, {2, 16, 8, 8}},
    {{.type = "conv2d", .out = 5, .kernel = 5, .stride = 1, .padding = 2}, {2, 6, 7, 10}},
    {{.type = "conv2d", .out = 7, .kernel = 2, .stride = 3, .padding = 0}, {1, 3, 8, 7}},
};

struct Result {
  Tensor out, grad_in;
  std::vector<float> grads;
};

// A random input of g's shape and a random output gradient of `layer`'s output shape.
std::pair<Tensor, Tensor> input_and_gradient(const Geometry& g, const Layer& layer) {
  const SampleShape sample(g.input.begin() + 1, g.input.end());
  std::vector<int> out_shape{g.input[0]};
  for (int d : layer.output_shape(sample)) out_shape.push_back(d);
  return {uniform_tensor(g.input, 5), uniform_tensor(out_shape, 6)};
}

// Forward and backward of `b` on `x` with output gradient `dy`.
Result run(BoundLayer& b, const Tensor& x, const Tensor& dy) {
  Result r;
  b.layer->forward(x, r.out);
  std::fill(b.grads.begin(), b.grads.end(), 123.0f);  // must be overwritten
  b.layer->backward(x, dy, r.grad_in);
  r.grads = b.grads;
  return r;
}

void check_against_im2col(const Geometry& g, bool relu) {
  SCOPED_TRACE(fmt::format("conv2d {}->{} k{} s{} p{} on [{}]{}", g.input[1], g.spec.out,
                           g.spec.kernel, g.spec.stride, g.spec.padding, fmt::join(g.input, ","),
                           relu ? " + relu" : ""));
  const SampleShape sample(g.input.begin() + 1, g.input.end());
  Rng rng_a{3, 4}, rng_b{3, 4};
  BoundLayer onednn = bind_layer(g.spec, sample, rng_a, kOnednn);
  BoundLayer im2col = bind_layer(g.spec, sample, rng_b);
  ASSERT_EQ(onednn.params, im2col.params);  // the kernels do not change the initialisation
  if (relu) {
    ASSERT_TRUE(onednn.layer->fuse_relu());
    ASSERT_TRUE(im2col.layer->fuse_relu());
  }
  const auto [x, dy] = input_and_gradient(g, *im2col.layer);
  const Result a = run(onednn, x, dy);
  const Result b = run(im2col, x, dy);
  ASSERT_EQ(a.out.shape, b.out.shape);
  expect_close(a.out.data, b.out.data, "output");
  ASSERT_EQ(a.grad_in.shape, x.shape);
  expect_close(a.grad_in.data, b.grad_in.data, "input gradient");
  expect_close(a.grads, b.grads, "weight and bias gradients");
}

TEST(OnednnConv, MatchesIm2col) {
  for (const Geometry& g : kGeometries) check_against_im2col(g, false);
}

TEST(OnednnConv, MatchesIm2colWithFusedRelu) {
  for (const Geometry& g : kGeometries) check_against_im2col(g, true);
}

// The same call gives the same bits, also after calls with another batch size (another set
// of primitives) in between: what the model digest and bit-identical resume rely on.
TEST(OnednnConv, SameBitsOnEveryCall) {
  const Geometry& g = kGeometries[2];
  const SampleShape sample(g.input.begin() + 1, g.input.end());
  Rng rng{3, 4};
  BoundLayer b = bind_layer(g.spec, sample, rng, kOnednn);
  ASSERT_TRUE(b.layer->fuse_relu());
  const auto [x, dy] = input_and_gradient(g, *b.layer);
  const Result first = run(b, x, dy);
  std::vector<int> other = g.input;
  other[0] = 5;
  std::vector<int> other_out = dy.shape;
  other_out[0] = 5;
  run(b, uniform_tensor(other, 7), uniform_tensor(other_out, 8));
  const Result again = run(b, x, dy);
  expect_same_bits(first.out.data, again.out.data, "output");
  expect_same_bits(first.grad_in.data, again.grad_in.data, "input gradient");
  expect_same_bits(first.grads, again.grads, "parameter gradients");
}

TEST(OnednnConv, EmptyBatch) {
  const Geometry& g = kGeometries[1];
  const SampleShape sample(g.input.begin() + 1, g.input.end());
  Rng rng{3, 4};
  BoundLayer b = bind_layer(g.spec, sample, rng, kOnednn);
  Tensor x;
  x.resize({0, g.input[1], g.input[2], g.input[3]});
  Tensor dy;
  dy.resize({0, g.spec.out, g.input[2], g.input[3]});
  const Result r = run(b, x, dy);
  EXPECT_EQ(r.out.shape, (std::vector<int>{0, g.spec.out, g.input[2], g.input[3]}));
  EXPECT_TRUE(std::all_of(r.grads.begin(), r.grads.end(), [](float v) { return v == 0.0f; }));
}

// A ResNet basic block and a downsampling one (conv-bn-relu, skip connections, a strided
// 1x1 projection, global pooling): every convolution shares the model's one scratch, so a
// layer that overwrote another's live buffer would show here.
const std::vector<LayerSpec> kResNetBlocks{
    {.type = "conv2d", .out = 16, .kernel = 3, .stride = 1, .padding = 1, .name = "stem"},
    {.type = "batchnorm", .name = "stem_bn"},
    {.type = "relu", .name = "stem_relu"},
    {.type = "conv2d", .out = 16, .kernel = 3, .stride = 1, .padding = 1, .name = "a1"},
    {.type = "batchnorm", .name = "a1_bn"},
    {.type = "relu", .name = "a1_relu"},
    {.type = "conv2d", .out = 16, .kernel = 3, .stride = 1, .padding = 1, .name = "a2"},
    {.type = "batchnorm", .name = "a2_bn"},
    {.type = "add", .name = "a_sum", .inputs = {"a2_bn", "stem_relu"}},
    {.type = "relu", .name = "a_out"},
    {.type = "conv2d", .out = 32, .kernel = 3, .stride = 2, .padding = 1, .name = "b1"},
    {.type = "batchnorm", .name = "b1_bn"},
    {.type = "relu", .name = "b1_relu"},
    {.type = "conv2d", .out = 32, .kernel = 3, .stride = 1, .padding = 1, .name = "b2"},
    {.type = "batchnorm", .name = "b2_bn"},
    {.type = "conv2d",
     .out = 32,
     .kernel = 1,
     .stride = 2,
     .padding = 0,
     .name = "proj",
     .inputs = {"a_out"}},
    {.type = "add", .name = "b_sum", .inputs = {"b2_bn", "proj"}},
    {.type = "relu", .name = "b_out"},
    {.type = "globalavgpool"},
    {.type = "flatten"},
    {.type = "linear", .out = 10}};

TEST(OnednnConv, ResNetBlocksMatchIm2col) {
  Model onednn(kResNetBlocks, {3, 16, 16}, 10, 9, kOnednn);
  Model im2col(kResNetBlocks, {3, 16, 16}, 10, 9);
  ASSERT_TRUE(std::ranges::equal(onednn.state(), im2col.state()));
  const Tensor x = uniform_tensor({6, 3, 16, 16}, 12);
  const Tensor dlogits = uniform_tensor({6, 10}, 13);
  const Pass pass{.training = true, .seed = 1, .step = 0};
  expect_close(onednn.forward(x, pass).data, im2col.forward(x, pass).data, "logits");
  onednn.forward(x, pass);
  onednn.backward(dlogits);
  const std::vector<float> grads_a(onednn.grads().begin(), onednn.grads().end());
  im2col.forward(x, pass);
  im2col.backward(dlogits);
  const std::vector<float> grads_b(im2col.grads().begin(), im2col.grads().end());
  // Batch norm divides by the batch's spread: allow ten times the layer tolerance.
  std::size_t bad = 0;
  for (std::size_t i = 0; i < grads_a.size(); ++i)
    if (!(std::fabs(grads_a[i] - grads_b[i]) <= 1e-4f + 1e-3f * std::fabs(grads_b[i]))) ++bad;
  EXPECT_EQ(bad, 0u) << "of " << grads_a.size() << " gradients";
  // And the oneDNN model computes the same bits again.
  onednn.forward(x, pass);
  onednn.backward(dlogits);
  expect_same_bits(std::vector<float>(onednn.grads().begin(), onednn.grads().end()), grads_a,
                   "gradients, second step");
}

// train.conv_kernels: auto is oneDNN unless the results must be portable; onednn with
// portable results is refused, naming the key.
TEST(OnednnConv, ConfigChoosesTheKernels) {
  const auto load = [](std::vector<std::string> overrides, bool portable) {
    return load_config_string(testing::kMinimalConfig, "k.toml",
                              ConfigSources{.overrides = std::move(overrides),
                                            .env_data_dir = "",
                                            .launch_time = "20260101-000000",
                                            .portable_results = portable});
  };
  EXPECT_EQ(train::layer_options(load({}, false)).conv, ConvKernels::kOnednn);
  EXPECT_EQ(train::layer_options(load({}, true)).conv, ConvKernels::kIm2col);
  EXPECT_EQ(train::layer_options(load({"train.conv_kernels=im2col"}, false)).conv,
            ConvKernels::kIm2col);
  EXPECT_EQ(train::layer_options(load({"train.conv_kernels=onednn"}, false)).conv,
            ConvKernels::kOnednn);
  EXPECT_EQ(train::layer_options(load({"cluster.blas_threads=3"}, false)).threads, 3);
  try {
    load({"train.conv_kernels=onednn"}, true);
    ADD_FAILURE() << "onednn accepted with portable results";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.conv_kernels"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("portable"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace conflux::model
