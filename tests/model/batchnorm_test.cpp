// Batch norm: gradients of the training pass, batch and running statistics, the evaluation
// pass, and statistics synchronised over two replicas through a StatReducer.

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>

#include "../support/bound_layer.hpp"
#include "../support/finite_difference.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::model {
namespace {

using conflux::testing::bind_layer;
using conflux::testing::BoundLayer;

Tensor uniform_tensor(std::vector<int> shape, Rng& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t;
  t.resize(std::move(shape));
  for (float& v : t.data) v = rng.uniform(lo, hi);
  return t;
}

// A batch norm over `sample` with momentum 0.2, random weight in [0.5, 1.5] and bias in
// [-0.5, 0.5] (init_params gives 1 and 0, which would hide a swapped weight and bias).
BoundLayer batchnorm(const SampleShape& sample, Rng& rng, bool random_affine = true) {
  BoundLayer b = bind_layer({.type = "batchnorm", .momentum = 0.2, .eps = 1e-5}, sample, rng);
  if (random_affine) {
    const std::size_t c = b.params.size() / 2;
    for (std::size_t i = 0; i < c; ++i) b.params[i] = rng.uniform(0.5f, 1.5f);
    for (std::size_t i = c; i < 2 * c; ++i) b.params[i] = rng.uniform(-0.5f, 0.5f);
  }
  return b;
}

// A training pass. Built field by field: Pass::samples has no default member initialiser, so
// designated initialisers that leave it out draw -Wmissing-field-initializers.
Pass training_pass(StatReducer* reducer = nullptr) {
  Pass pass;
  pass.training = true;
  pass.reducer = reducer;
  return pass;
}

void forward(Layer& layer, const Pass& pass, const Tensor& in, Tensor& out) {
  const Tensor* inputs[] = {&in};
  layer.forward_pass(pass, inputs, out);
}

void backward(Layer& layer, const Pass& pass, const Tensor& in, const Tensor& dy, Tensor* dx) {
  const Tensor* inputs[] = {&in};
  Tensor* grads[] = {dx};
  layer.backward_pass(pass, inputs, dy, grads);
}

// Per channel of [N, C, ...]: the values of the channel, in double.
std::vector<std::vector<double>> channel_values(const Tensor& t) {
  const int n = t.shape[0], c = t.shape[1];
  const std::size_t s = t.size() / (static_cast<std::size_t>(n) * c);
  std::vector<std::vector<double>> values(c);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < c; ++j)
      for (std::size_t k = 0; k < s; ++k) values[j].push_back(t.data[(i * c + j) * s + k]);
  return values;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / v.size();
}

double biased_var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double sum = 0.0;
  for (double x : v) sum += (x - m) * (x - m);
  return sum / v.size();
}

// dL/dx, dL/dweight and dL/dbias of L = sum(out * R) in training mode, by central differences.
// Batch statistics make every output depend on all inputs of its channel.
void check_training_gradient(std::vector<int> shape, std::uint64_t seed) {
  Rng rng{seed, 7};
  const SampleShape sample(shape.begin() + 1, shape.end());
  BoundLayer b = batchnorm(sample, rng);
  Tensor in = uniform_tensor(shape, rng, -1.0f, 2.0f);
  const Tensor r = uniform_tensor(shape, rng);
  const Pass pass = training_pass();
  Tensor out, dx;
  forward(*b.layer, pass, in, out);
  std::fill(b.grads.begin(), b.grads.end(), 123.0f);  // backward overwrites
  dx.resize(shape);
  std::fill(dx.data.begin(), dx.data.end(), 123.0f);
  backward(*b.layer, pass, in, r, &dx);
  ASSERT_EQ(dx.shape, in.shape);
  const std::vector<float> analytic_in = dx.data;
  const std::vector<float> analytic_params = b.grads;
  auto evaluate = [&] {
    Tensor o;
    forward(*b.layer, pass, in, o);
    return conflux::testing::weighted_sum(o, r);
  };
  conflux::testing::expect_gradient("input", in.data, analytic_in, 3e-3f, evaluate);
  conflux::testing::expect_gradient("weight and bias", b.params, analytic_params, 3e-3f, evaluate);
}

TEST(BatchNorm, TrainingGradient2d) {
  check_training_gradient({4, 3, 3, 2}, 1);
}

TEST(BatchNorm, TrainingGradient1d) {
  check_training_gradient({6, 5}, 2);
}

TEST(BatchNorm, EvaluationGradient) {
  Rng rng{3, 4};
  BoundLayer b = batchnorm({2, 2, 2}, rng);
  for (std::size_t i = 0; i < 2; ++i) b.buffers[i] = rng.uniform(-1.0f, 1.0f);
  for (std::size_t i = 2; i < 4; ++i) b.buffers[i] = rng.uniform(0.5f, 2.0f);
  Tensor in = uniform_tensor({3, 2, 2, 2}, rng);
  const Tensor r = uniform_tensor(in.shape, rng);
  Tensor out, dx;
  b.layer->forward(in, out);
  b.layer->backward(in, r, dx);
  const std::vector<float> analytic_in = dx.data;
  const std::vector<float> analytic_params = b.grads;
  auto evaluate = [&] {
    Tensor o;
    b.layer->forward(in, o);
    return conflux::testing::weighted_sum(o, r);
  };
  conflux::testing::expect_gradient("input", in.data, analytic_in, 1e-2f, evaluate);
  conflux::testing::expect_gradient("weight and bias", b.params, analytic_params, 1e-2f, evaluate);
}

TEST(BatchNorm, TrainingNormalisesAndUpdatesRunningStatistics) {
  Rng rng{5, 6};
  BoundLayer b = batchnorm({3, 4, 4}, rng, /*random_affine=*/false);
  ASSERT_EQ(b.layer->describe(), "batchnorm 3 momentum 0.2 eps 1e-05");
  std::vector<float> expected_mean(3, 0.0f), expected_var(3, 1.0f);
  for (int step = 0; step < 2; ++step) {
    Tensor in = uniform_tensor({6, 3, 4, 4}, rng);
    // Channel c has mean ~c and spread ~(c + 1): distinct statistics per channel.
    for (std::size_t i = 0; i < in.size(); ++i) {
      const int c = static_cast<int>(i / 16) % 3;
      in.data[i] = c + (c + 1) * in.data[i];
    }
    Tensor out;
    forward(*b.layer, training_pass(), in, out);
    const auto x = channel_values(in);
    const auto y = channel_values(out);
    for (int c = 0; c < 3; ++c) {
      SCOPED_TRACE("step " + std::to_string(step) + " channel " + std::to_string(c));
      EXPECT_NEAR(mean_of(y[c]), 0.0, 1e-5);
      EXPECT_NEAR(biased_var_of(y[c]), 1.0, 1e-4);
      // PyTorch's update: the unbiased variance enters the running one.
      const double n = x[c].size();
      expected_mean[c] = 0.8 * expected_mean[c] + 0.2 * mean_of(x[c]);
      expected_var[c] = 0.8 * expected_var[c] + 0.2 * biased_var_of(x[c]) * n / (n - 1);
      EXPECT_NEAR(b.buffers[c], expected_mean[c], 1e-5);
      EXPECT_NEAR(b.buffers[3 + c], expected_var[c], 1e-5);
    }
  }
}

TEST(BatchNorm, EvaluationUsesRunningStatistics) {
  Rng rng{7, 8};
  BoundLayer b = batchnorm({2}, rng);
  const std::vector<float> running{0.5f, -1.0f, 4.0f, 0.25f};  // mean {0.5, -1}, var {4, 0.25}
  std::copy(running.begin(), running.end(), b.buffers.begin());
  const Tensor in = uniform_tensor({3, 2}, rng, -2.0f, 2.0f);
  Tensor out, out_pass;
  b.layer->forward(in, out);
  forward(*b.layer, Pass{}, in, out_pass);
  EXPECT_EQ(out.data, out_pass.data);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 2; ++c) {
      const double x = in.data[i * 2 + c];
      const double y =
          (x - running[c]) / std::sqrt(running[2 + c] + 1e-5) * b.params[c] + b.params[2 + c];
      EXPECT_NEAR(out.data[i * 2 + c], y, 1e-5) << i << "," << c;
    }
  // Evaluation leaves the running statistics alone.
  EXPECT_EQ(std::vector<float>(b.buffers.begin(), b.buffers.end()), running);
}

TEST(BatchNorm, SingleValuePerChannelKeepsRunningStatistics) {
  Rng rng{9, 10};
  BoundLayer b = batchnorm({3}, rng);
  const std::vector<float> before = b.buffers;
  const Tensor in = uniform_tensor({1, 3}, rng);
  Tensor out;
  forward(*b.layer, training_pass(), in, out);
  for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(out.data[c], b.params[3 + c]);  // xhat = 0
  EXPECT_EQ(b.buffers, before);
}

TEST(BatchNorm, OneInputBackwardAfterTrainingForwardIsAnError) {
  Rng rng{11, 12};
  BoundLayer b = batchnorm({2}, rng);
  const Tensor in = uniform_tensor({4, 2}, rng);
  Tensor out, dx;
  forward(*b.layer, training_pass(), in, out);
  EXPECT_THROW(b.layer->backward(in, out, dx), RuntimeError);
}

// Two replicas that sum their vectors through a barrier, as trainers do through an allreduce.
// Both add the two halves in the same order, so they get identical sums.
class TwoReplicaSum {
 public:
  class Reducer final : public StatReducer {
   public:
    Reducer(TwoReplicaSum& owner, int index) : owner_(owner), index_(index) {}
    void sum(std::span<double> values) override { owner_.sum(index_, values); }
    int calls = 0;

   private:
    TwoReplicaSum& owner_;
    int index_;
  };

  Reducer& reducer(int index) { return reducers_[index]; }

 private:
  void sum(int index, std::span<double> values) {
    slots_[index].assign(values.begin(), values.end());
    barrier_.arrive_and_wait();
    // No ASSERT here: returning early would leave the other replica waiting at the barrier.
    EXPECT_EQ(slots_[0].size(), slots_[1].size());
    if (slots_[0].size() == slots_[1].size()) {
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = slots_[0][i] + slots_[1][i];
    }
    barrier_.arrive_and_wait();  // both have read the slots before either refills them
    ++reducers_[index].calls;
  }

  std::barrier<> barrier_{2};
  std::vector<double> slots_[2];
  Reducer reducers_[2] = {Reducer(*this, 0), Reducer(*this, 1)};
};

Tensor rows(const Tensor& t, int begin, int end) {
  Tensor part;
  std::vector<int> shape = t.shape;
  shape[0] = end - begin;
  part.resize(shape);
  const std::size_t width = t.per_sample();
  std::copy(t.data.begin() + begin * width, t.data.begin() + end * width, part.data.begin());
  return part;
}

// |got - want| <= 1e-5 * the largest |want|, element by element.
void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float scale = 0.0f;
  for (float v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5f * scale) << what << "[" << i << "]";
}

// One replica on a batch of 8 against two replicas on rows [0, split) and [split, 8) that
// synchronise through the reducer: the same outputs, input gradients, summed parameter
// gradients and running statistics.
void check_synchronised(std::vector<int> shape, int split) {
  Rng rng{13, static_cast<std::uint64_t>(split)};
  const SampleShape sample(shape.begin() + 1, shape.end());
  BoundLayer whole = batchnorm(sample, rng);
  Tensor in = uniform_tensor(shape, rng);
  // The halves differ (the second is shifted and wider), so local statistics would not do.
  for (std::size_t i = in.size() / 2; i < in.size(); ++i) in.data[i] = 1.0f + 3.0f * in.data[i];
  const Tensor dy = uniform_tensor(shape, rng);
  Tensor out, dx;
  forward(*whole.layer, training_pass(), in, out);
  backward(*whole.layer, training_pass(), in, dy, &dx);

  TwoReplicaSum sum;
  BoundLayer part[2] = {batchnorm(sample, rng), batchnorm(sample, rng)};
  Tensor part_out[2], part_dx[2];
  const int bounds[3] = {0, split, shape[0]};
  auto replica = [&](int k) {
    // The weights of `whole` (which its forward and backward leave unchanged), in place: the
    // layer holds spans into part[k].params.
    std::copy(whole.params.begin(), whole.params.end(), part[k].params.begin());
    const Tensor x = rows(in, bounds[k], bounds[k + 1]);
    const Pass pass = training_pass(&sum.reducer(k));
    forward(*part[k].layer, pass, x, part_out[k]);
    backward(*part[k].layer, pass, x, rows(dy, bounds[k], bounds[k + 1]), &part_dx[k]);
  };
  std::thread other(replica, 1);
  replica(0);
  other.join();

  EXPECT_EQ(sum.reducer(0).calls, 2);
  EXPECT_EQ(sum.reducer(1).calls, 2);
  auto joined = [](const Tensor(&t)[2]) {
    std::vector<float> v = t[0].data;
    v.insert(v.end(), t[1].data.begin(), t[1].data.end());
    return v;
  };
  expect_close("output", joined(part_out), out.data);
  expect_close("input gradient", joined(part_dx), dx.data);
  std::vector<float> grads(whole.grads.size());
  for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = part[0].grads[i] + part[1].grads[i];
  expect_close("summed parameter gradients", grads, whole.grads);
  EXPECT_EQ(part[0].buffers, part[1].buffers);
  expect_close("running statistics", part[0].buffers, whole.buffers);
}

TEST(BatchNorm, SynchronisedStatistics2d) {
  check_synchronised({8, 3, 4, 5}, 4);
}

TEST(BatchNorm, SynchronisedStatistics1d) {
  check_synchronised({8, 6}, 4);
}

TEST(BatchNorm, SynchronisedStatisticsWithAnEmptyReplica) {
  check_synchronised({8, 2, 3, 3}, 8);
}

TEST(BatchNorm, LayoutAndFactory) {
  auto layer = make_layer({.type = "batchnorm"});
  EXPECT_EQ(layer->type(), "batchnorm");
  const auto params = layer->param_layout({16, 8, 8});
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].name, "weight");
  EXPECT_EQ(params[1].name, "bias");
  EXPECT_EQ(params[1].shape, std::vector<int>{16});
  const auto buffers = layer->buffer_layout({10});
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].name, "running_mean");
  EXPECT_EQ(buffers[1].name, "running_var");
  EXPECT_EQ(buffers[0].shape, std::vector<int>{10});
  EXPECT_THROW(layer->output_shape({3, 4}), InputError);
  EXPECT_THROW(make_layer({.type = "batchnorm", .eps = 0.0}), InputError);
}

}  // namespace
}  // namespace conflux::model
