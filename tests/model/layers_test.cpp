// Layer construction, shapes, forward results against naive reference loops, empty batches.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../support/bound_layer.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/avgpool2d.hpp"
#include "conflux/model/conv2d.hpp"
#include "conflux/model/im2col.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/linear.hpp"
#include "conflux/model/maxpool2d.hpp"

namespace conflux::model {
namespace {

Tensor random_tensor(std::vector<int> shape, Rng& rng) {
  Tensor t;
  t.resize(std::move(shape));
  for (float& v : t.data) v = rng.uniform(-1.0f, 1.0f);
  return t;
}

using conflux::testing::BoundLayer;

BoundLayer bind_layer(const LayerSpec& spec, const SampleShape& sample, std::uint64_t seed = 1) {
  Rng rng{seed, 99};
  return conflux::testing::bind_layer(spec, sample, rng);
}

// Tolerance for float results against double references: sums of <= a few hundred products
// of values in [-1, 1].
constexpr double kTol = 1e-4;

TEST(ModelLayers, MakeLayerValidatesSpecs) {
  EXPECT_THROW(make_layer({.type = "linear", .out = 0}), InputError);
  EXPECT_THROW(make_layer({.type = "conv2d", .out = 0}), InputError);
  EXPECT_THROW(make_layer({.type = "conv2d", .out = 4, .kernel = 0}), InputError);
  EXPECT_THROW(make_layer({.type = "conv2d", .out = 4, .kernel = 3, .stride = 0}), InputError);
  EXPECT_THROW(make_layer({.type = "conv2d", .out = 4, .kernel = 3, .stride = 1, .padding = -1}),
               InputError);
  EXPECT_THROW(make_layer({.type = "maxpool", .kernel = 0}), InputError);
  EXPECT_THROW(make_layer({.type = "maxpool", .kernel = 2, .stride = -1}), InputError);
  EXPECT_THROW(make_layer({.type = "maxpool", .kernel = 2, .stride = 2, .padding = -1}),
               InputError);
  // PyTorch's rule: padding at most half the kernel, so every window holds a real element.
  try {
    make_layer({.type = "maxpool", .kernel = 3, .stride = 2, .padding = 2});
    FAIL() << "maxpool padding 2 with kernel 3 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "maxpool: padding must be between 0 and half the kernel (1 for kernel 3), got 2");
  }
  EXPECT_THROW(make_layer({.type = "avgpool", .kernel = 0}), InputError);
  EXPECT_THROW(make_layer({.type = "avgpool", .kernel = 2, .stride = 2, .padding = 1}), InputError);
  try {
    make_layer({.type = "dense", .out = 3});
    FAIL() << "unknown type accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown layer type 'dense' (known types: linear, conv2d, maxpool, avgpool, "
              "globalavgpool, batchnorm, dropout, add, concat, relu, flatten)");
  }
  // Defaults irrelevant to a type do not trip it.
  EXPECT_EQ(make_layer({.type = "relu"})->type(), "relu");
  EXPECT_EQ(make_layer({.type = "flatten"})->type(), "flatten");
  EXPECT_EQ(make_layer({.type = "linear", .out = 3})->type(), "linear");
  EXPECT_EQ(make_layer({.type = "conv2d", .out = 3})->type(), "conv2d");
  EXPECT_EQ(make_layer({.type = "maxpool", .kernel = 2, .stride = 0})->type(), "maxpool");
}

TEST(ModelLayers, OutputShapes) {
  EXPECT_EQ(make_layer({.type = "linear", .out = 7})->output_shape({12}), SampleShape({7}));
  EXPECT_THROW(make_layer({.type = "linear", .out = 7})->output_shape({3, 4, 4}), InputError);
  const auto conv =
      make_layer({.type = "conv2d", .out = 8, .kernel = 3, .stride = 2, .padding = 1});
  EXPECT_EQ(conv->output_shape({3, 32, 32}), SampleShape({8, 16, 16}));
  EXPECT_EQ(conv->output_shape({3, 7, 5}), SampleShape({8, 4, 3}));
  EXPECT_THROW(conv->output_shape({784}), InputError);
  EXPECT_THROW(make_layer({.type = "conv2d", .out = 1, .kernel = 5})->output_shape({1, 4, 4}),
               InputError);
  EXPECT_EQ(make_layer({.type = "maxpool", .kernel = 2, .stride = 0})->output_shape({4, 7, 6}),
            SampleShape({4, 3, 3}));
  EXPECT_THROW(make_layer({.type = "maxpool", .kernel = 3})->output_shape({4, 2, 6}), InputError);
  EXPECT_EQ(make_layer({.type = "avgpool", .kernel = 3, .stride = 2})->output_shape({4, 7, 6}),
            SampleShape({4, 3, 2}));
  EXPECT_THROW(make_layer({.type = "avgpool", .kernel = 3})->output_shape({4, 2, 6}), InputError);
  EXPECT_EQ(make_layer({.type = "globalavgpool"})->output_shape({16, 8, 8}), SampleShape({16}));
  EXPECT_THROW(make_layer({.type = "globalavgpool"})->output_shape({16}), InputError);
  EXPECT_EQ(make_layer({.type = "flatten"})->output_shape({64, 4, 4}), SampleShape({1024}));
  EXPECT_EQ(make_layer({.type = "flatten"})->output_shape({10}), SampleShape({10}));
  EXPECT_EQ(make_layer({.type = "relu"})->output_shape({2, 3, 4}), SampleShape({2, 3, 4}));
}

TEST(ModelLayers, MaxPoolStrideRule) {
  // 0 means "same as the kernel" (docs/config.md); everything else is used as given.
  EXPECT_EQ(MaxPool2d(2, 0).stride(), 2);
  EXPECT_EQ(MaxPool2d(3, 0).stride(), 3);
  EXPECT_EQ(MaxPool2d(2, 1).stride(), 1);
  EXPECT_EQ(MaxPool2d(2, 3).stride(), 3);
  EXPECT_EQ(MaxPool2d(3, 2).output_shape({1, 7, 7}), SampleShape({1, 3, 3}));
  EXPECT_EQ(MaxPool2d(2, 1).output_shape({1, 7, 5}), SampleShape({1, 6, 4}));
  // Padded: H' = (H + 2 padding - kernel) / stride + 1, ResNet's stem pool 112 -> 56.
  EXPECT_EQ(MaxPool2d(3, 2, 1).output_shape({64, 112, 112}), SampleShape({64, 56, 56}));
  EXPECT_EQ(MaxPool2d(3, 2, 1).output_shape({1, 7, 6}), SampleShape({1, 4, 3}));
  EXPECT_EQ(MaxPool2d(2, 0, 1).output_shape({1, 3, 3}), SampleShape({1, 2, 2}));
}

TEST(ModelLayers, LinearForwardMatchesReference) {
  const int n = 5, in = 13, out = 6;
  BoundLayer b = bind_layer({.type = "linear", .out = out}, {in});
  Rng rng{2, 3};
  const Tensor x = random_tensor({n, in}, rng);
  Tensor y;
  b.layer->forward(x, y);
  ASSERT_EQ(y.shape, std::vector<int>({n, out}));
  for (int i = 0; i < n; ++i) {
    for (int o = 0; o < out; ++o) {
      double ref = b.params[out * in + o];  // bias after the {out, in} weight
      for (int f = 0; f < in; ++f) ref += double(b.params[o * in + f]) * x.data[i * in + f];
      EXPECT_NEAR(y.data[i * out + o], ref, kTol) << i << "," << o;
    }
  }
}

TEST(ModelLayers, LinearInitIsPyTorchUniform) {
  const int in = 400;
  BoundLayer b = bind_layer({.type = "linear", .out = 50}, {in});
  const float bound = 1.0f / std::sqrt(float(in));
  double sum = 0.0, sq = 0.0;
  for (float v : b.params) {
    ASSERT_LE(std::abs(v), bound);
    sum += v;
    sq += double(v) * v;
  }
  const double count = double(b.params.size());
  // U(-a, a) has mean 0 and variance a^2 / 3.
  EXPECT_NEAR(sum / count, 0.0, 0.05 * bound);
  EXPECT_NEAR(sq / count, bound * bound / 3.0, 0.05 * bound * bound);
}

struct ConvCase {
  int n, c, h, w, out, k, s, p;
};

// The geometry of one image of `cc`, its output size computed.
ConvGeometry geometry_of(const ConvCase& cc) {
  ConvGeometry g{.channels = cc.c,
                 .height = cc.h,
                 .width = cc.w,
                 .kernel = cc.k,
                 .stride = cc.s,
                 .padding = cc.p};
  g.compute_output();
  return g;
}

// "k3 p1 s1 8x8", for failure messages.
std::string describe(const ConvGeometry& g) {
  return "k" + std::to_string(g.kernel) + " p" + std::to_string(g.padding) + " s" +
         std::to_string(g.stride) + " " + std::to_string(g.height) + "x" + std::to_string(g.width);
}

// Geometries of the unfolding tests: the stride-1 "same" shapes that take the plane-copy and
// contiguous paths (3x3 p1, 1x1 p0, 5x5 p2, images of one row or column) and others.
const std::vector<ConvCase> kUnfoldCases{
    ConvCase{1, 3, 8, 8, 0, 3, 1, 1}, ConvCase{1, 2, 5, 9, 0, 3, 1, 1},
    ConvCase{1, 2, 1, 6, 0, 3, 1, 1}, ConvCase{1, 2, 6, 1, 0, 3, 1, 1},
    ConvCase{1, 4, 3, 4, 0, 1, 1, 0}, ConvCase{1, 2, 7, 6, 0, 5, 1, 2},
    ConvCase{1, 1, 2, 2, 0, 5, 1, 2}, ConvCase{1, 2, 7, 6, 0, 3, 2, 1},
    ConvCase{1, 2, 6, 6, 0, 3, 1, 0}, ConvCase{1, 1, 4, 4, 0, 3, 1, 3}};

class ModelConvForward : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ModelConvForward, MatchesDirectConvolution) {
  const ConvCase cc = GetParam();
  BoundLayer b =
      bind_layer({.type = "conv2d", .out = cc.out, .kernel = cc.k, .stride = cc.s, .padding = cc.p},
                 {cc.c, cc.h, cc.w});
  Rng rng{4, 5};
  const Tensor x = random_tensor({cc.n, cc.c, cc.h, cc.w}, rng);
  Tensor y;
  b.layer->forward(x, y);
  const int oh_count = (cc.h + 2 * cc.p - cc.k) / cc.s + 1;
  const int ow_count = (cc.w + 2 * cc.p - cc.k) / cc.s + 1;
  ASSERT_EQ(y.shape, std::vector<int>({cc.n, cc.out, oh_count, ow_count}));
  const float* weight = b.params.data();
  const float* bias = b.params.data() + std::size_t(cc.out) * cc.c * cc.k * cc.k;
  auto X = [&](int n, int c, int i, int j) {
    return x.data[((n * cc.c + c) * cc.h + i) * cc.w + j];
  };
  auto W = [&](int o, int c, int i, int j) {
    return weight[((o * cc.c + c) * cc.k + i) * cc.k + j];
  };
  for (int n = 0; n < cc.n; ++n)
    for (int o = 0; o < cc.out; ++o)
      for (int oh = 0; oh < oh_count; ++oh)
        for (int ow = 0; ow < ow_count; ++ow) {
          double ref = bias[o];
          for (int c = 0; c < cc.c; ++c)
            for (int ki = 0; ki < cc.k; ++ki)
              for (int kj = 0; kj < cc.k; ++kj) {
                const int ih = oh * cc.s - cc.p + ki;
                const int iw = ow * cc.s - cc.p + kj;
                if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
                ref += double(W(o, c, ki, kj)) * X(n, c, ih, iw);
              }
          const float got = y.data[((n * cc.out + o) * oh_count + oh) * ow_count + ow];
          ASSERT_NEAR(got, ref, kTol) << n << "," << o << "," << oh << "," << ow;
        }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ModelConvForward,
    ::testing::Values(ConvCase{2, 3, 8, 8, 4, 3, 1, 1}, ConvCase{3, 2, 7, 9, 5, 3, 2, 1},
                      ConvCase{1, 4, 6, 5, 3, 1, 1, 0}, ConvCase{2, 1, 5, 5, 2, 5, 1, 2},
                      ConvCase{2, 3, 9, 8, 2, 2, 3, 0}, ConvCase{1, 2, 4, 4, 3, 3, 1, 3}));

TEST(ModelLayers, Im2colAndCol2imAreAdjoint) {
  // <im2col(x), c> == <x, col2im(c)> for every geometry: col2im is the exact adjoint that the
  // conv backward relies on.
  Rng rng{6, 7};
  for (const ConvCase cc : {ConvCase{1, 2, 7, 6, 0, 3, 2, 1}, ConvCase{1, 3, 5, 5, 0, 3, 1, 2},
                            ConvCase{1, 1, 8, 7, 0, 2, 3, 0}}) {
    const ConvGeometry g = geometry_of(cc);
    const Tensor x = random_tensor({int(g.image_size())}, rng);
    const Tensor c = random_tensor({int(g.col_rows() * g.col_cols())}, rng);
    std::vector<float> col(c.size()), img(x.size());
    im2col(x.data, g, col);
    col2im(c.data, g, img);
    double lhs = 0.0, rhs = 0.0;
    for (std::size_t i = 0; i < col.size(); ++i) lhs += double(col[i]) * c.data[i];
    for (std::size_t i = 0; i < img.size(); ++i) rhs += double(img[i]) * x.data[i];
    EXPECT_NEAR(lhs, rhs, 1e-4);
  }
}

TEST(ModelLayers, Im2colMatchesItsDefinition) {
  // Every entry against the definition (row (c*k + ki)*k + kj, column oh*W' + ow holds pixel
  // (c, oh*s - p + ki, ow*s - p + kj), 0 outside).
  Rng rng{11, 12};
  for (const ConvCase& cc : kUnfoldCases) {
    const ConvGeometry g = geometry_of(cc);
    const Tensor x = random_tensor({int(g.image_size())}, rng);
    std::vector<float> col(g.col_rows() * g.col_cols(), -7.0f);
    im2col(x.data, g, col);
    std::size_t at = 0;
    for (int c = 0; c < g.channels; ++c)
      for (int ki = 0; ki < g.kernel; ++ki)
        for (int kj = 0; kj < g.kernel; ++kj)
          for (int oh = 0; oh < g.out_height; ++oh)
            for (int ow = 0; ow < g.out_width; ++ow, ++at) {
              const int ih = oh * g.stride - g.padding + ki;
              const int iw = ow * g.stride - g.padding + kj;
              const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
              const float want = inside ? x.data[(c * g.height + ih) * g.width + iw] : 0.0f;
              ASSERT_EQ(col[at], want) << describe(g) << " at c" << c << " ki" << ki << " kj" << kj
                                       << " oh" << oh << " ow" << ow;
            }
  }
}

TEST(ModelLayers, Col2imWithMasksEqualsCol2imBitForBit) {
  // The contiguous, masked path of the stride-1 "same" geometries (and the fallback of the
  // others) against the row-by-row col2im, with exact zeros and negative zeros in the input;
  // one Col2imMasks reused across geometries (twice through the list, so that it is rebuilt
  // for a geometry it held before), as a layer would across calls.
  Rng rng{13, 14};
  Col2imMasks masks;
  std::vector<ConvCase> twice = kUnfoldCases;
  twice.insert(twice.end(), kUnfoldCases.begin(), kUnfoldCases.end());
  for (const ConvCase& cc : twice) {
    const ConvGeometry g = geometry_of(cc);
    Tensor c = random_tensor({int(g.col_rows() * g.col_cols())}, rng);
    for (std::size_t i = 0; i < c.size(); i += 7) c.data[i] = i % 2 == 0 ? 0.0f : -0.0f;
    std::vector<float> plain(g.image_size(), 5.0f), masked(g.image_size(), -5.0f);
    col2im(c.data, g, plain);
    col2im(c.data, g, masked, masks);
    EXPECT_EQ(std::memcmp(plain.data(), masked.data(), plain.size() * sizeof(float)), 0)
        << describe(g);
  }
}

TEST(ModelLayers, MaxPoolForwardMatchesReference) {
  for (const auto& [k, s, h, w] : std::vector<std::array<int, 4>>{
           {2, 2, 6, 6}, {2, 2, 7, 5}, {3, 2, 7, 7}, {3, 3, 9, 10}, {2, 1, 5, 6}}) {
    BoundLayer b = bind_layer({.type = "maxpool", .kernel = k, .stride = s}, {3, h, w});
    Rng rng{8, 9};
    const Tensor x = random_tensor({2, 3, h, w}, rng);
    Tensor y;
    b.layer->forward(x, y);
    const int oh_count = (h - k) / s + 1, ow_count = (w - k) / s + 1;
    ASSERT_EQ(y.shape, std::vector<int>({2, 3, oh_count, ow_count}));
    for (int p = 0; p < 6; ++p)
      for (int oh = 0; oh < oh_count; ++oh)
        for (int ow = 0; ow < ow_count; ++ow) {
          float ref = -1e30f;
          for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
              ref = std::max(ref, x.data[(p * h + oh * s + i) * w + ow * s + j]);
          EXPECT_EQ(y.data[(p * oh_count + oh) * ow_count + ow], ref);
        }
  }
}

// Padding is -infinity, not zero: on all-negative inputs the edge windows still give the
// largest real element (zero padding would give 0), and backward routes to it.
TEST(ModelLayers, MaxPoolPaddedByHand) {
  BoundLayer b = bind_layer({.type = "maxpool", .kernel = 3, .stride = 2, .padding = 1}, {1, 4, 4});
  Tensor x{.shape = {1, 1, 4, 4},
           .data = {-1, -2, -3, -4,     //
                    -5, -6, -7, -8,     //
                    -9, -10, -11, -12,  //
                    -13, -14, -15, -16}};
  Tensor y, dx;
  b.layer->forward(x, y);
  EXPECT_EQ(y.shape, (std::vector<int>{1, 1, 2, 2}));
  // Windows: rows {0,1} or {1,2,3} by columns {0,1} or {1,2,3}.
  EXPECT_EQ(y.data, (std::vector<float>{-1, -2, -5, -6}));
  const Tensor dy{.shape = {1, 1, 2, 2}, .data = {1, 2, 4, 8}};
  b.layer->backward(x, dy, dx);
  EXPECT_EQ(dx.data, (std::vector<float>{1, 2, 0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

// Padded pools against a reference that skips padded positions, with ties to the first maximum.
TEST(ModelLayers, MaxPoolPaddedMatchesReference) {
  for (const auto& [k, s, p, h, w] : std::vector<std::array<int, 5>>{
           {3, 2, 1, 7, 6}, {2, 2, 1, 5, 6}, {3, 1, 1, 4, 5}, {5, 3, 2, 8, 9}, {4, 2, 2, 6, 6}}) {
    BoundLayer b =
        bind_layer({.type = "maxpool", .kernel = k, .stride = s, .padding = p}, {3, h, w});
    Rng rng{8, 10};
    const Tensor x = random_tensor({2, 3, h, w}, rng);
    Tensor y;
    b.layer->forward(x, y);
    const int oh_count = (h + 2 * p - k) / s + 1, ow_count = (w + 2 * p - k) / s + 1;
    ASSERT_EQ(y.shape, std::vector<int>({2, 3, oh_count, ow_count}));
    for (int plane = 0; plane < 6; ++plane)
      for (int oh = 0; oh < oh_count; ++oh)
        for (int ow = 0; ow < ow_count; ++ow) {
          float ref = -std::numeric_limits<float>::infinity();
          for (int i = oh * s - p; i < oh * s - p + k; ++i)
            for (int j = ow * s - p; j < ow * s - p + k; ++j)
              if (i >= 0 && i < h && j >= 0 && j < w)
                ref = std::max(ref, x.data[(plane * h + i) * w + j]);
          EXPECT_EQ(y.data[(plane * oh_count + oh) * ow_count + ow], ref) << k << s << p;
        }
  }
}

TEST(ModelLayers, MaxPoolTiesGoToFirstMaximum) {
  BoundLayer b = bind_layer({.type = "maxpool", .kernel = 2, .stride = 0}, {1, 2, 4});
  Tensor x;
  x.resize({1, 1, 2, 4});
  x.data = {1, 5, 3, 3,  //
            5, 2, 3, 3};
  Tensor y, dx;
  b.layer->forward(x, y);
  EXPECT_EQ(y.data, std::vector<float>({5, 3}));
  Tensor dy;
  dy.resize({1, 1, 1, 2});
  dy.data = {10, 20};
  b.layer->backward(x, dy, dx);
  EXPECT_EQ(dx.data, std::vector<float>({0, 10, 20, 0,  //
                                         0, 0, 0, 0}));

  // The general path (stride 1, overlapping windows): same rule, and shared maxima add up.
  MaxPool2d overlapping(2, 1);
  overlapping.forward(x, y);
  EXPECT_EQ(y.data, std::vector<float>({5, 5, 3}));
  dy.resize({1, 1, 1, 3});
  dy.data = {1, 2, 4};
  overlapping.backward(x, dy, dx);
  EXPECT_EQ(dx.data, std::vector<float>({0, 3, 4, 0,  //
                                         0, 0, 0, 0}));
}

TEST(ModelLayers, AvgPoolForwardIsTheWindowMean) {
  // One plane 3x4, kernel 2 stride 1 -> 2x3 means; globalavgpool -> the plane's mean.
  Tensor x{.shape = {1, 1, 3, 4}, .data = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
  Tensor y;
  AvgPool2d(2, 1).forward(x, y);
  EXPECT_EQ(y.shape, (std::vector<int>{1, 1, 2, 3}));
  EXPECT_EQ(y.data, (std::vector<float>{3.5f, 4.5f, 5.5f, 7.5f, 8.5f, 9.5f}));
  GlobalAvgPool().forward(x, y);
  EXPECT_EQ(y.shape, (std::vector<int>{1, 1}));
  EXPECT_EQ(y.data, std::vector<float>{6.5f});
}

// The 2x2 / stride 2 backward writes each input once instead of zeroing and scattering; its
// bits must be the scatter's, including +0 (not -0) for a -0 gradient and zeros in the odd
// row and column no window covers.
TEST(ModelLayers, MaxPool2x2BackwardMatchesScatter) {
  BoundLayer b = bind_layer({.type = "maxpool", .kernel = 2, .stride = 0}, {3, 7, 5});
  Rng rng{10, 11};
  const Tensor x = random_tensor({2, 3, 7, 5}, rng);
  Tensor y, dx;
  b.layer->forward(x, y);
  Tensor dy = random_tensor(y.shape, rng);
  dy.data[0] = -0.0f;
  dy.data[5] = -0.0f;
  b.layer->backward(x, dy, dx);
  std::vector<float> ref(x.size(), 0.0f);
  for (int p = 0; p < 6; ++p)
    for (int oh = 0; oh < 3; ++oh)
      for (int ow = 0; ow < 2; ++ow) {
        int best = (p * 7 + 2 * oh) * 5 + 2 * ow;
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) {
            const int at = (p * 7 + 2 * oh + i) * 5 + 2 * ow + j;
            if (x.data[at] > x.data[best]) best = at;
          }
        ref[best] += dy.data[(p * 3 + oh) * 2 + ow];
      }
  ASSERT_EQ(dx.data.size(), ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(dx.data[i], ref[i]) << i;
    EXPECT_EQ(std::signbit(dx.data[i]), std::signbit(ref[i])) << i;
  }
}

TEST(ModelLayers, ReluAndFlatten) {
  BoundLayer relu = bind_layer({.type = "relu"}, {4});
  Tensor x, y, dx, dy;
  x.resize({1, 4});
  x.data = {-1.0f, 0.0f, 2.0f, -0.5f};
  relu.layer->forward(x, y);
  EXPECT_EQ(y.data, std::vector<float>({0, 0, 2, 0}));
  dy.resize({1, 4});
  dy.data = {1, 2, 3, 4};
  relu.layer->backward(x, dy, dx);
  EXPECT_EQ(dx.data, std::vector<float>({0, 0, 3, 0}));  // 0 at x == 0

  BoundLayer flat = bind_layer({.type = "flatten"}, {2, 1, 3});
  Rng rng{1, 1};
  const Tensor img = random_tensor({2, 2, 1, 3}, rng);
  flat.layer->forward(img, y);
  EXPECT_EQ(y.shape, std::vector<int>({2, 6}));
  EXPECT_EQ(y.data, img.data);
  flat.layer->backward(img, y, dx);
  EXPECT_EQ(dx.shape, img.shape);
  EXPECT_EQ(dx.data, img.data);
}

TEST(ModelLayers, SkippedInputGradientKeepsParameterGradients) {
  Rng rng{10, 11};
  const Tensor x = random_tensor({3, 2, 6, 6}, rng);
  BoundLayer a = bind_layer({.type = "conv2d", .out = 4, .kernel = 3, .padding = 1}, {2, 6, 6});
  BoundLayer b = bind_layer({.type = "conv2d", .out = 4, .kernel = 3, .padding = 1}, {2, 6, 6});
  dynamic_cast<Conv2d&>(*b.layer).set_input_grad_needed(false);
  Tensor ya, yb, da, db;
  a.layer->forward(x, ya);
  b.layer->forward(x, yb);
  a.layer->backward(x, ya, da);
  b.layer->backward(x, yb, db);
  EXPECT_EQ(a.grads, b.grads);
  EXPECT_EQ(da.shape, x.shape);
  EXPECT_EQ(db.size(), 0u);

  const Tensor v = random_tensor({3, 5}, rng);
  BoundLayer c = bind_layer({.type = "linear", .out = 2}, {5});
  dynamic_cast<Linear&>(*c.layer).set_input_grad_needed(false);
  c.layer->forward(v, ya);
  c.layer->backward(v, ya, db);
  EXPECT_EQ(db.size(), 0u);
}

TEST(ModelLayers, EmptyBatchForwardBackward) {
  struct Case {
    LayerSpec spec;
    std::vector<int> input;
  };
  // Built one by one: an initializer_list of these trips a GCC 12 -Wmaybe-uninitialized
  // false positive on the std::string inside LayerSpec.
  std::vector<Case> cases(7);
  cases[0].spec = {.type = "linear", .out = 3};
  cases[0].input = {0, 5};
  cases[1].spec = {.type = "conv2d", .out = 3, .kernel = 3, .padding = 1};
  cases[1].input = {0, 2, 5, 5};
  cases[2].spec = {.type = "maxpool", .kernel = 2, .stride = 0};
  cases[3].spec.type = "relu";
  cases[4].spec.type = "flatten";
  cases[5].spec = {.type = "avgpool", .kernel = 2, .stride = 0};
  cases[6].spec.type = "globalavgpool";
  for (std::size_t i = 2; i < cases.size(); ++i) cases[i].input = {0, 2, 4, 4};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec.type);
    BoundLayer b = bind_layer(c.spec, SampleShape(c.input.begin() + 1, c.input.end()));
    std::fill(b.grads.begin(), b.grads.end(), 5.0f);  // stale values from an earlier batch
    Tensor x, y, dx;
    x.resize(c.input);
    b.layer->forward(x, y);
    EXPECT_EQ(y.size(), 0u);
    ASSERT_FALSE(y.shape.empty());
    EXPECT_EQ(y.shape[0], 0);
    std::vector<int> expected{0};
    for (int d : b.layer->output_shape(SampleShape(c.input.begin() + 1, c.input.end())))
      expected.push_back(d);
    EXPECT_EQ(y.shape, expected);
    b.layer->backward(x, y, dx);
    EXPECT_EQ(dx.shape, x.shape);
    EXPECT_EQ(dx.size(), 0u);
    for (float g : b.grads) ASSERT_EQ(g, 0.0f);
  }
}

TEST(ModelLayers, BackwardOverwritesParameterGradients) {
  Rng rng{12, 13};
  const Tensor x = random_tensor({2, 3, 5, 5}, rng);
  BoundLayer b = bind_layer({.type = "conv2d", .out = 2, .kernel = 3}, {3, 5, 5});
  Tensor y, dx;
  b.layer->forward(x, y);
  b.layer->backward(x, y, dx);
  const std::vector<float> first = b.grads;
  b.layer->backward(x, y, dx);
  EXPECT_EQ(b.grads, first);
}

}  // namespace
}  // namespace conflux::model
