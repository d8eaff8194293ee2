#pragma once
/// @file finite_difference.hpp
/// Test helper: analytic gradients against central differences of a scalar objective.
///
/// The objective is usually L = sum(out * R) with a fixed random R (so dL/dout = R),
/// accumulated in double; the differences (L(v + eps) - L(v - eps)) are divided by the step
/// actually taken in float. An entry passes when |numeric - analytic| <= abs_tol + rel_tol *
/// max(|numeric|, |analytic|).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "conflux/model/tensor.hpp"

namespace conflux::testing {

/// Tolerances of expect_gradient.
struct GradientTolerance {
  double rel = 1e-2;
  double abs = 1e-3;
};

/// sum(out * r) in double.
inline double weighted_sum(const model::Tensor& out, const model::Tensor& r) {
  EXPECT_EQ(out.size(), r.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(out.data[i]) * r.data[i];
  return sum;
}

/// Compares analytic and numeric gradients of `values`; evaluate() recomputes L.
template <typename Evaluate>
void expect_gradient(const char* what, std::span<float> values, std::span<const float> analytic,
                     float eps, Evaluate evaluate, GradientTolerance tol = {}) {
  ASSERT_EQ(values.size(), analytic.size()) << what;
  double largest = 0.0;
  int failures = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    values[i] = saved + eps;
    const double plus = evaluate();
    values[i] = saved - eps;
    const double minus = evaluate();
    values[i] = saved;
    const double step = static_cast<double>(saved + eps) - static_cast<double>(saved - eps);
    const double numeric = (plus - minus) / step;
    const double a = analytic[i];
    largest = std::max(largest, std::abs(numeric));
    if (std::abs(numeric - a) > tol.abs + tol.rel * std::max(std::abs(numeric), std::abs(a))) {
      if (++failures <= 5) {
        ADD_FAILURE() << what << "[" << i << "]: analytic " << a << " numeric " << numeric;
      }
    }
  }
  EXPECT_EQ(failures, 0) << what;
  // Guards against a vacuous check (e.g. an objective that does not depend on the values).
  EXPECT_GT(largest, 1e-2) << what << ": numeric gradient is all ~0";
}

}  // namespace conflux::testing
