// Dropout: identity in evaluation, inverted dropout in training with masks keyed by
// (seed, layer salt, step, sample), and the gradient through the mask.

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/dropout.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::model {
namespace {

Tensor uniform_tensor(std::vector<int> shape, std::uint64_t seed, float lo, float hi) {
  Rng rng{seed, 99};
  Tensor t;
  t.resize(std::move(shape));
  for (float& v : t.data) v = rng.uniform(lo, hi);
  return t;
}

// A training pass. Built field by field: Pass::samples has no default member initialiser, so
// designated initialisers that leave it out draw -Wmissing-field-initializers.
Pass training_pass(std::uint64_t seed, std::uint64_t step,
                   std::span<const std::uint32_t> samples = {}) {
  Pass pass;
  pass.training = true;
  pass.seed = seed;
  pass.step = step;
  pass.samples = samples;
  return pass;
}

Tensor run(Layer& layer, const Pass& pass, const Tensor& in) {
  const Tensor* inputs[] = {&in};
  Tensor out;
  layer.forward_pass(pass, inputs, out);
  return out;
}

Tensor ones(std::vector<int> shape) {
  Tensor t;
  t.resize(std::move(shape));
  std::fill(t.data.begin(), t.data.end(), 1.0f);
  return t;
}

// Row r of t.
std::vector<float> row(const Tensor& t, int r) {
  const std::size_t w = t.per_sample();
  return {t.data.begin() + r * w, t.data.begin() + (r + 1) * w};
}

TEST(Dropout, EvaluationAndRateZeroAreIdentity) {
  const Tensor in = uniform_tensor({4, 3, 5, 5}, 1, -1.0f, 1.0f);
  Dropout layer(0.5);
  EXPECT_EQ(run(layer, Pass{}, in).data, in.data);
  Tensor out, dx;
  layer.forward(in, out);
  EXPECT_EQ(out.data, in.data);
  layer.backward(in, out, dx);
  EXPECT_EQ(dx.data, in.data);
  Dropout none(0.0);
  EXPECT_EQ(run(none, training_pass(3, 4), in).data, in.data);
  // Training with a positive rate does change it: the tests above can fail.
  EXPECT_NE(run(layer, training_pass(3, 4), in).data, in.data);
}

TEST(Dropout, DropsAboutRateAndScalesTheRestExactly) {
  const double rate = 0.3;
  const Tensor in = uniform_tensor({64, 1000}, 2, 0.5f, 1.5f);  // no zeros of its own
  Dropout layer(rate);
  const Tensor out = run(layer, training_pass(7, 11), in);
  ASSERT_EQ(out.shape, in.shape);
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (out.data[i] == 0.0f) {
      ++zeros;
    } else {
      ASSERT_EQ(out.data[i], in.data[i] * scale) << i;
    }
  }
  // 64000 draws: the standard deviation of the fraction is 0.0018, so 0.01 is 5.5 sigma.
  EXPECT_NEAR(static_cast<double>(zeros) / in.size(), rate, 0.01);
}

TEST(Dropout, MaskFollowsTheSampleNotTheRow) {
  Dropout layer(0.5);
  layer.set_salt(3);
  const Tensor in = ones({4, 2, 4, 4});
  const std::vector<std::uint32_t> samples{10, 11, 12, 13};
  const std::vector<std::uint32_t> permuted{12, 10, 13, 11};
  const Tensor a = run(layer, training_pass(5, 9, samples), in);
  const Tensor b = run(layer, training_pass(5, 9, permuted), in);
  // Sample 12 sits in row 2 of a and row 0 of b, and so on.
  EXPECT_EQ(row(b, 0), row(a, 2));
  EXPECT_EQ(row(b, 1), row(a, 0));
  EXPECT_EQ(row(b, 2), row(a, 3));
  EXPECT_EQ(row(b, 3), row(a, 1));
  EXPECT_NE(row(a, 0), row(a, 1));  // samples get masks of their own
  // Without sample indices, a row's number is its sample.
  const std::vector<std::uint32_t> identity{0, 1, 2, 3};
  EXPECT_EQ(run(layer, training_pass(5, 9), in).data,
            run(layer, training_pass(5, 9, identity), in).data);
  // Another step, seed or layer salt gives another mask.
  EXPECT_NE(run(layer, training_pass(5, 10, samples), in).data, a.data);
  EXPECT_NE(run(layer, training_pass(6, 9, samples), in).data, a.data);
  Dropout other(0.5);
  other.set_salt(4);
  EXPECT_NE(run(other, training_pass(5, 9, samples), in).data, a.data);
}

TEST(Dropout, GradientIsTheMaskScaled) {
  const double rate = 0.25;
  Dropout layer(rate);
  const Tensor in = uniform_tensor({8, 50}, 3, 0.5f, 1.5f);
  const Tensor dy = uniform_tensor({8, 50}, 4, -1.0f, 1.0f);
  const Pass pass = training_pass(1, 2);
  const Tensor out = run(layer, pass, in);
  Tensor dx;
  const Tensor* inputs[] = {&in};
  Tensor* grads[] = {&dx};
  layer.backward_pass(pass, inputs, dy, grads);
  ASSERT_EQ(dx.shape, in.shape);
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  std::size_t kept = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool keep = out.data[i] != 0.0f;
    kept += keep;
    ASSERT_EQ(dx.data[i], keep ? dy.data[i] * scale : 0.0f) << i;
  }
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, in.size());
  // A one-input backward cannot know the training pass's mask.
  EXPECT_THROW(layer.backward(in, dy, dx), RuntimeError);
}

TEST(Dropout, Factory) {
  auto layer = make_layer({.type = "dropout", .rate = 0.2});
  EXPECT_EQ(layer->type(), "dropout");
  EXPECT_EQ(layer->describe(), "dropout 0.2");
  EXPECT_TRUE(layer->param_layout({3, 4, 4}).empty());
  EXPECT_EQ(layer->output_shape({3, 4, 4}), (SampleShape{3, 4, 4}));
  EXPECT_THROW(make_layer({.type = "dropout", .rate = 1.0}), InputError);
}

}  // namespace
}  // namespace conflux::model
