// cuDNN convolutions (conflux/gpu/cudnn_conv.hpp) against the CPU conv2d (model::Conv2d with
// its im2col kernels, bias zero) on random inputs, in NHWC on the device and NCHW on the host.
//
// Tolerances, element-wise |got - want| <= rel * max|want| + abs, with max over the tensor:
//   fp32 (TF32 off)  rel 1e-4, abs 1e-5: the same products, summed in another order (and by
//                    FFT or Winograd transforms where cuDNN picks them).
//   tf32             rel 2e-3: each input is rounded to 10 mantissa bits (relative error up to
//                    2^-11 = 4.9e-4 when rounded, 2^-10 when truncated, per input), and the
//                    errors of a sum of random-signed products partly cancel. Simulated on the
//                    host with truncation (the worse case) for these six geometries: at most
//                    8.6e-4 of the max for y and 7.7e-4 for dw.
//   bf16             rel 1e-2: the inputs are rounded to bf16 on the host first and the CPU
//                    reference is computed from the rounded values, so only the device's result
//                    rounding and summation order differ. bf16 keeps 8 significant bits, so one
//                    rounding of the output costs up to 2^-8 = 0.4 % of the value; the rest is
//                    the margin for accumulation-order differences (fp32 sums, possibly split).
// Without a GPU, the library load, the check macro and the shape logic run; the device tests
// skip.

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"

#if CONFLUX_HAVE_CUDA

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/cudnn_api.hpp"
#include "conflux/gpu/cudnn_conv.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/model/conv2d.hpp"

namespace conflux::gpu {
namespace {

using namespace conflux::gpu::testing;  // NOLINT(google-build-using-namespace)

// The six geometries: the ResNet cases and an odd one (channels not a multiple of 8,
// non-square input, stride 2 leaving the last row and column of the input unread).
struct Case {
  const char* name;
  ConvShape shape;
};
constexpr ConvShape shape(int n, int c, int h, int w, int k_out, int kernel, int stride, int pad) {
  return {.batch = n,
          .channels = c,
          .height = h,
          .width = w,
          .out_channels = k_out,
          .kernel = kernel,
          .stride = stride,
          .padding = pad};
}
const std::array<Case, 6> kCases = {{
    {"3x3 stride 1 pad 1", shape(4, 16, 14, 14, 32, 3, 1, 1)},
    {"3x3 stride 2 pad 1", shape(3, 16, 15, 15, 24, 3, 2, 1)},
    {"1x1 stride 1", shape(4, 32, 8, 8, 64, 1, 1, 0)},
    {"1x1 stride 2 (ResNet projection)", shape(2, 24, 14, 14, 48, 1, 2, 0)},
    {"7x7 stride 2 pad 3 (ResNet stem)", shape(2, 3, 32, 32, 16, 7, 2, 3)},
    {"5x5 stride 2 pad 1, 13x12, 5 -> 7 channels", shape(3, 5, 13, 12, 7, 5, 2, 1)},
}};

// ---- host helpers ----------------------------------------------------------------------------

// bf16 as its bits: round to nearest even (inputs are finite), and back (exact).
std::uint16_t to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
float from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// [a, b, c, d] -> [a, c, d, b]: NCHW -> NHWC, and {K, C, k, k} -> KRSC.
std::vector<float> channels_last(const std::vector<float>& v, int a, int b, int c, int d) {
  std::vector<float> out(v.size());
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < b; ++j)
      for (int k = 0; k < c; ++k)
        for (int l = 0; l < d; ++l) {
          out[((static_cast<std::size_t>(i) * c + k) * d + l) * b + j] =
              v[((static_cast<std::size_t>(i) * b + j) * c + k) * d + l];
        }
  return out;
}

// |got - want| <= rel * max|want| + abs for every element; reports the worst.
void expect_near_max(const std::vector<float>& got, const std::vector<float>& want, double rel,
                     double abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  const double tol = rel * scale + abs;
  std::size_t bad = 0;
  std::size_t worst = 0;
  double worst_err = -1.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= tol)) ++bad;  // also NaN (an element never written)
    if (!(err <= worst_err)) {
      worst_err = err;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements beyond the tolerance " << tol << " (max |want| " << scale
                     << "); worst at " << worst << ": got " << got[worst] << ", want "
                     << want[worst];
}

struct Tolerance {
  double rel;
  double abs;
};
Tolerance tolerance(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return {1e-4, 1e-5};
    case Precision::kTf32:
      return {2e-3, 1e-5};
    case Precision::kBf16:
      return {1e-2, 1e-5};
  }
  return {0.0, 0.0};
}

// Random data and the CPU conv2d's results, all in the device layouts (NHWC, KRSC).
struct Reference {
  std::vector<float> x, w, dy;  // inputs (rounded to bf16 values when asked)
  std::vector<float> y, dx, dw;
};

Reference cpu_reference(const ConvShape& s, bool bf16_inputs, std::uint64_t seed) {
  Rng rng{31, seed};
  std::vector<float> x = random_floats(s.input_elements(), rng);
  const float bound = 1.0f / std::sqrt(static_cast<float>(s.channels * s.kernel * s.kernel));
  std::vector<float> w = random_floats(s.weight_elements(), rng, -bound, bound);
  std::vector<float> dy = random_floats(s.output_elements(), rng);
  if (bf16_inputs) {
    for (std::vector<float>* v : {&x, &w, &dy})
      for (float& f : *v) f = from_bf16(to_bf16(f));
  }
  model::Conv2d conv(s.out_channels, s.kernel, s.stride, s.padding);
  const std::size_t params = w.size() + static_cast<std::size_t>(s.out_channels);
  std::vector<float> p(params, 0.0f);  // weight {K, C, k, k}, then the bias: zero
  std::vector<float> g(params, 0.0f);
  std::copy(w.begin(), w.end(), p.begin());
  conv.bind(p, g);
  const model::Tensor in = tensor({s.batch, s.channels, s.height, s.width}, x);
  model::Tensor out;
  conv.forward(in, out);
  EXPECT_EQ(out.shape,
            std::vector<int>({s.batch, s.out_channels, s.output_height(), s.output_width()}));
  model::Tensor grad_in;
  conv.backward(in, tensor(out.shape, dy), grad_in);

  const int oh = s.output_height(), ow = s.output_width();
  Reference r;
  r.x = channels_last(x, s.batch, s.channels, s.height, s.width);
  r.w = channels_last(w, s.out_channels, s.channels, s.kernel, s.kernel);
  r.dy = channels_last(dy, s.batch, s.out_channels, oh, ow);
  r.y = channels_last(out.data, s.batch, s.out_channels, oh, ow);
  r.dx = channels_last(grad_in.data, s.batch, s.channels, s.height, s.width);
  const std::vector<float> dw(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(w.size()));
  r.dw = channels_last(dw, s.out_channels, s.channels, s.kernel, s.kernel);
  return r;
}

// ---- device runs -----------------------------------------------------------------------------

struct DeviceResult {
  std::vector<float> y, dx, dw;  // NHWC, NHWC, KRSC, converted to float
};

// Runs the three calls of `conv` on device copies of the reference's inputs. Outputs start as
// NaN, so that an element cuDNN does not write shows.
template <class T>
DeviceResult run_as(const CudnnConv& conv, const Reference& r, const Stream& stream) {
  const auto encode = [](const std::vector<float>& v) {
    std::vector<T> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (sizeof(T) == 2) {
        out[i] = to_bf16(v[i]);
      } else {
        out[i] = v[i];
      }
    }
    return out;
  };
  const auto up = [&](const std::vector<float>& v) {
    DeviceBuffer<T> d(v.size());
    d.copy_from_host(encode(v), stream.get());
    return d;
  };
  const auto down = [&](const DeviceBuffer<T>& d) {
    std::vector<T> host(d.size());
    d.copy_to_host(host, stream.get());
    stream.synchronize();
    std::vector<float> out(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) {
      if constexpr (sizeof(T) == 2) {
        out[i] = from_bf16(host[i]);
      } else {
        out[i] = host[i];
      }
    }
    return out;
  };
  const float nan = std::nanf("");
  DeviceBuffer<T> x = up(r.x), w = up(r.w), dy = up(r.dy);
  DeviceBuffer<T> y = up(std::vector<float>(r.y.size(), nan));
  DeviceBuffer<T> dx = up(std::vector<float>(r.dx.size(), nan));
  DeviceBuffer<T> dw = up(std::vector<float>(r.dw.size(), nan));
  DeviceBuffer<std::byte> workspace(conv.workspace_bytes());
  conv.forward(x.data(), w.data(), y.data(), workspace.data(), stream.get());
  conv.backward_data(dy.data(), w.data(), dx.data(), workspace.data(), stream.get());
  conv.backward_filter(x.data(), dy.data(), dw.data(), workspace.data(), stream.get());
  return {.y = down(y), .dx = down(dx), .dw = down(dw)};
}

DeviceResult run(const CudnnConv& conv, const Reference& r, const Stream& stream) {
  return conv.options().precision == Precision::kBf16 ? run_as<std::uint16_t>(conv, r, stream)
                                                      : run_as<float>(conv, r, stream);
}

void expect_matches(const DeviceResult& got, const Reference& want, Precision p) {
  const Tolerance t = tolerance(p);
  expect_near_max(got.y, want.y, t.rel, t.abs, "y (forward)");
  expect_near_max(got.dx, want.dx, t.rel, t.abs, "dx (backward data)");
  expect_near_max(got.dw, want.dw, t.rel, t.abs, "dw (backward filter)");
}

void log_choice(const Case& c, const CudnnConv& conv) {
  std::cout << "[ cuDNN    ] " << to_string(conv.options().precision) << " " << c.name << ": "
            << conv.describe() << "\n";
}

// Every geometry in one precision against the CPU.
void check_precision(Precision p) {
  const Stream stream;
  const CudnnHandle handle(stream.get());
  std::uint64_t seed = 1;
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::Message()
                 << to_string(p) << " " << c.name << ": " << to_string(c.shape));
    const Reference want = cpu_reference(c.shape, p == Precision::kBf16, seed++);
    const CudnnConv conv(handle.get(), c.shape, {.precision = p});
    log_choice(c, conv);
    EXPECT_LE(conv.workspace_bytes(), conv.options().workspace_limit_bytes);
    expect_matches(run(conv, want, stream), want, p);
  }
}

// ---- without a GPU ---------------------------------------------------------------------------

TEST(CudnnApi, LoadsWithoutGpuAndReportsVersion9) {
  const CudnnApi& api = cudnn();  // libcudnn.so.9: by name, or next to the CUDA runtime
  const std::size_t version = api.get_version();  // needs no device
  EXPECT_GE(version, 90000u);
  EXPECT_EQ(version / 10000, static_cast<std::size_t>(CUDNN_MAJOR));
  EXPECT_STREQ(api.get_error_string(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
}

TEST(CudnnApi, CheckMacroNamesCallStatusAndPlace) {
  const auto fails = [] { return CUDNN_STATUS_BAD_PARAM; };
  try {
    CONFLUX_CUDNN_CHECK(fails());
    FAIL() << "no exception";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with("fails() failed: CUDNN_STATUS_BAD_PARAM")) << what;
    EXPECT_TRUE(std::string(e.file()).ends_with("cudnn_conv_test.cpp")) << e.file();
    EXPECT_GT(e.line(), 0);
  }
  const auto succeeds = [] { return CUDNN_STATUS_SUCCESS; };
  EXPECT_NO_THROW(CONFLUX_CUDNN_CHECK(succeeds()));
}

TEST(CudnnConvShape, OutputSizesAsCpuConv2d) {
  for (const Case& c : kCases) {
    const ConvShape& s = c.shape;
    const model::Conv2d conv(s.out_channels, s.kernel, s.stride, s.padding);
    EXPECT_EQ(conv.output_shape({s.channels, s.height, s.width}),
              model::SampleShape({s.out_channels, s.output_height(), s.output_width()}))
        << c.name;
  }
  const ConvShape s = shape(2, 3, 13, 12, 7, 5, 2, 1);
  EXPECT_EQ(s.output_height(), 6);
  EXPECT_EQ(s.output_width(), 5);
  EXPECT_EQ(s.input_elements(), 2u * 13 * 12 * 3);
  EXPECT_EQ(s.output_elements(), 2u * 6 * 5 * 7);
  EXPECT_EQ(s.weight_elements(), 7u * 5 * 5 * 3);
  EXPECT_EQ(to_string(s),
            "conv2d [N=2, C=3, H=13, W=12] -> [K=7, 6x5], kernel 5, stride 2, padding 1");
}

TEST(CudnnConvShape, PrecisionNamesAndSizes) {
  EXPECT_STREQ(to_string(Precision::kFp32), "fp32");
  EXPECT_STREQ(to_string(Precision::kTf32), "tf32");
  EXPECT_STREQ(to_string(Precision::kBf16), "bf16");
  EXPECT_EQ(element_bytes(Precision::kFp32), 4u);
  EXPECT_EQ(element_bytes(Precision::kTf32), 4u);
  EXPECT_EQ(element_bytes(Precision::kBf16), 2u);
}

// Bad shapes are refused before the handle is used (here: none).
TEST(CudnnConvShape, BadShapesAreRefusedBeforeCudnnRuns) {
  const auto message = [](const ConvShape& s) {
    try {
      const CudnnConv conv(nullptr, s, {});
    } catch (const RuntimeError& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message(shape(0, 3, 8, 8, 4, 3, 1, 1)).find("bad shape conv2d [N=0"),
            std::string::npos);
  EXPECT_NE(message(shape(1, 3, 8, 8, 4, 3, 0, 1)).find("bad shape"), std::string::npos);
  EXPECT_NE(message(shape(1, 3, 8, 8, 4, 3, 1, -1)).find("bad shape"), std::string::npos);
  EXPECT_NE(message(shape(1, 3, 4, 8, 4, 7, 1, 1)).find("does not fit"), std::string::npos);
  EXPECT_NE(message(shape(70000, 64, 256, 256, 64, 3, 1, 1)).find("2^31"), std::string::npos);
}

// The test's own host side: the CPU reference, moved to NHWC and KRSC, is the convolution those
// layouts describe (a direct loop in double), so the device tests compare like with like.
TEST(CudnnConvShape, ReferenceLayoutsMatchADirectNhwcConvolution) {
  for (const Case& c : {kCases[1], kCases[5]}) {
    SCOPED_TRACE(c.name);
    const ConvShape& s = c.shape;
    const Reference r = cpu_reference(s, false, 5);
    const int oh = s.output_height(), ow = s.output_width();
    std::vector<double> y(r.y.size(), 0.0), dx(r.dx.size(), 0.0), dw(r.dw.size(), 0.0);
    const auto xi = [&](int n, int h, int w, int ch) {
      return ((static_cast<std::size_t>(n) * s.height + h) * s.width + w) * s.channels + ch;
    };
    const auto yi = [&](int n, int h, int w, int k) {
      return ((static_cast<std::size_t>(n) * oh + h) * ow + w) * s.out_channels + k;
    };
    const auto wi = [&](int k, int i, int j, int ch) {
      return ((static_cast<std::size_t>(k) * s.kernel + i) * s.kernel + j) * s.channels + ch;
    };
    for (int n = 0; n < s.batch; ++n)
      for (int h = 0; h < oh; ++h)
        for (int w = 0; w < ow; ++w)
          for (int k = 0; k < s.out_channels; ++k)
            for (int i = 0; i < s.kernel; ++i)
              for (int j = 0; j < s.kernel; ++j) {
                const int ih = h * s.stride - s.padding + i, iw = w * s.stride - s.padding + j;
                if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) continue;
                for (int ch = 0; ch < s.channels; ++ch) {
                  y[yi(n, h, w, k)] += double{r.x[xi(n, ih, iw, ch)]} * r.w[wi(k, i, j, ch)];
                  dx[xi(n, ih, iw, ch)] += double{r.dy[yi(n, h, w, k)]} * r.w[wi(k, i, j, ch)];
                  dw[wi(k, i, j, ch)] += double{r.dy[yi(n, h, w, k)]} * r.x[xi(n, ih, iw, ch)];
                }
              }
    const auto as_float = [](const std::vector<double>& v) {
      return std::vector<float>(v.begin(), v.end());
    };
    expect_near_max(r.y, as_float(y), 1e-5, 1e-6, "y");
    expect_near_max(r.dx, as_float(dx), 1e-5, 1e-6, "dx");
    expect_near_max(r.dw, as_float(dw), 1e-5, 1e-6, "dw");
  }
}

TEST(CudnnConvShape, HostBf16RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(from_bf16(0x3F80), 1.0f);
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f), 0x3F80);      // halfway, to the even neighbour below
  EXPECT_EQ(to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // halfway, to the even neighbour above
  EXPECT_EQ(to_bf16(-2.5f), 0xC020);
  EXPECT_EQ(from_bf16(to_bf16(0.1f)), 0.10009765625f);
}

// ---- on the GPU ------------------------------------------------------------------------------

TEST(CudnnConvGpu, HandleCreatesAndMoves) {
  CONFLUX_REQUIRE_GPU();
  const Stream stream;
  CudnnHandle a(stream.get());
  EXPECT_NE(a.get(), nullptr);
  CudnnHandle b(std::move(a));
  EXPECT_NE(b.get(), nullptr);
  b.set_stream(nullptr);
}

TEST(CudnnConvGpu, Fp32MatchesCpu) {
  CONFLUX_REQUIRE_GPU();
  check_precision(Precision::kFp32);
}

TEST(CudnnConvGpu, Tf32MatchesCpu) {
  CONFLUX_REQUIRE_GPU();
  check_precision(Precision::kTf32);
}

TEST(CudnnConvGpu, Bf16MatchesCpu) {
  CONFLUX_REQUIRE_GPU();
  check_precision(Precision::kBf16);
}

// deterministic = true: the same bits on a second run of the same algorithms.
TEST(CudnnConvGpu, DeterministicRepeatsBitForBit) {
  CONFLUX_REQUIRE_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  for (const Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    for (const Case& c : {kCases[0], kCases[1], kCases[4]}) {
      SCOPED_TRACE(::testing::Message() << to_string(p) << " " << c.name);
      const Reference r = cpu_reference(c.shape, p == Precision::kBf16, 7);
      const CudnnConv conv(handle.get(), c.shape, {.precision = p, .deterministic = true});
      const DeviceResult first = run(conv, r, stream);
      const DeviceResult second = run(conv, r, stream);
      expect_bits(second.y, first.y, "y");
      expect_bits(second.dx, first.dx, "dx");
      expect_bits(second.dw, first.dw, "dw");
    }
  }
}

// A workspace limit of 0: either algorithms that need none (implicit GEMM needs none for the
// forward pass) are chosen and compute the same results, or construction fails with the
// documented error naming the shape, the limit and cuDNN's candidates.
TEST(CudnnConvGpu, ZeroWorkspaceLimitChoosesWorkspaceFreeAlgorithmsOrSaysWhy) {
  CONFLUX_REQUIRE_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  int built = 0;
  for (const Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    std::uint64_t seed = 100;
    for (const Case& c : kCases) {
      SCOPED_TRACE(::testing::Message() << to_string(p) << " " << c.name);
      const ConvOptions options{.precision = p, .workspace_limit_bytes = 0};
      try {
        const CudnnConv conv(handle.get(), c.shape, options);
        ++built;
        log_choice(c, conv);
        EXPECT_EQ(conv.workspace_bytes(), 0u);
        const Reference want = cpu_reference(c.shape, p == Precision::kBf16, seed++);
        expect_matches(run(conv, want, stream), want, p);
      } catch (const RuntimeError& e) {
        const std::string what = e.what();
        std::cout << "[ cuDNN    ] " << to_string(p) << " " << c.name << ", no workspace: " << what
                  << "\n";
        EXPECT_NE(what.find(to_string(c.shape)), std::string::npos) << what;
        EXPECT_NE(what.find("workspace limit 0 B"), std::string::npos) << what;
      }
    }
  }
  std::cout << "[ cuDNN    ] with a workspace limit of 0: " << built << " of " << 3 * kCases.size()
            << " built\n";
}

TEST(CudnnConvGpu, CacheBuildsOncePerShapeAndOptions) {
  CONFLUX_REQUIRE_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  CudnnConvCache cache(handle.get(), {.precision = Precision::kFp32});
  const CudnnConv& a = cache.get(kCases[0].shape);
  const CudnnConv& again = cache.get(kCases[0].shape);
  EXPECT_EQ(&a, &again);
  EXPECT_EQ(cache.size(), 1u);
  const CudnnConv& other_shape = cache.get(kCases[1].shape);
  EXPECT_NE(&other_shape, &a);
  const CudnnConv& other_options = cache.get(kCases[0].shape, {.precision = Precision::kBf16});
  EXPECT_NE(&other_options, &a);
  EXPECT_EQ(other_options.options().precision, Precision::kBf16);
  EXPECT_EQ(&cache.get(kCases[0].shape, {.precision = Precision::kBf16}), &other_options);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(&cache.get(kCases[0].shape), &a);  // still the first one
  EXPECT_EQ(cache.workspace_bytes(), std::max({a.workspace_bytes(), other_shape.workspace_bytes(),
                                               other_options.workspace_bytes()}));
  // A convolution that cannot be built is not cached.
  EXPECT_THROW(cache.get(shape(0, 1, 1, 1, 1, 1, 1, 0)), RuntimeError);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(CudnnConvGpu, MovedConvKeepsItsChoiceAndTheOldOneRefusesCalls) {
  CONFLUX_REQUIRE_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  const Case& c = kCases[2];
  CudnnConv first(handle.get(), c.shape, {});
  const std::string chosen = first.describe();
  CudnnConv moved(std::move(first));
  EXPECT_EQ(moved.describe(), chosen);
  const Reference want = cpu_reference(c.shape, false, 3);
  expect_matches(run(moved, want, stream), want, Precision::kFp32);
  EXPECT_THROW(first.forward(nullptr, nullptr, nullptr, nullptr, stream.get()),  // NOLINT
               RuntimeError);
}

}  // namespace
}  // namespace conflux::gpu

#else  // CPU-only build: cuDNN is not part of it; say so instead of passing silently.

namespace conflux::gpu {
namespace {

TEST(CudnnConv, NeedCudaBuild) {
  CONFLUX_REQUIRE_GPU();
}

}  // namespace
}  // namespace conflux::gpu

#endif  // CONFLUX_HAVE_CUDA
