#pragma once
/// @file gpu_test_support.hpp
/// Shared by the GPU tests: the no-GPU skip, random data, comparisons with stated tolerances.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/core/rng.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/model/tensor.hpp"

/// First statement of every test that needs a GPU: skips it, with the reason, when the process
/// sees none (no driver, no device, or a CPU-only build), else makes device 0 current.
#define CONFLUX_REQUIRE_GPU()                                                     \
  do {                                                                            \
    const ::conflux::gpu::GpuProbe conflux_probe_ = ::conflux::gpu::probe_gpus(); \
    if (conflux_probe_.devices == 0) {                                            \
      GTEST_SKIP() << "no GPU: " << conflux_probe_.reason;                        \
    }                                                                             \
    ::conflux::gpu::use_device(0);                                                \
  } while (0)

namespace conflux::gpu::testing {

/// Tolerances of GEMM-based results against the CPU layers (OpenBLAS vs cuBLAS or the
/// emulation's plain loop differ only in summation order): element-wise
/// |got - want| <= kRel * |want| + kAbs * max(1, max |want|).
inline constexpr double kRel = 1e-4;
inline constexpr double kAbs = 1e-5;

inline std::vector<float> random_floats(std::size_t count, Rng& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::vector<float> v(count);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

inline model::Tensor tensor(std::vector<int> shape, std::vector<float> data) {
  model::Tensor t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

/// Every element within the GEMM tolerance; reports the worst one.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         const std::string& what, double rel = kRel, double abs = kAbs) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1.0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  std::size_t worst = 0;
  double worst_excess = -1.0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double tol = rel * std::fabs(want[i]) + abs * scale;
    if (!(err <= tol)) ++bad;  // also catches NaN
    if (!(err - tol <= worst_excess)) {
      worst_excess = err - tol;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements out of tolerance; worst at " << worst << ": got "
                     << (got.empty() ? 0.0f : got[worst]) << ", want "
                     << (want.empty() ? 0.0f : want[worst]);
}

/// Bit-identical float vectors.
inline void expect_bits(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ; first at "
                     << first << ": got " << (bad ? got[first] : 0.0f) << ", want "
                     << (bad ? want[first] : 0.0f);
}

}  // namespace conflux::gpu::testing
