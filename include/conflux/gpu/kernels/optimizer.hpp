#pragma once
/// @file optimizer.hpp
/// The optimisers' element updates over the model's flat buffers on a device (one launch for
/// all parameters), and the gradient's sum of squares and clipping, with model's arithmetic
/// (model::SgdElement, model::adam_element, model::clip_grad_norm's coefficient).

#include <cmath>
#include <cstddef>

#include "conflux/core/host_device.hpp"
#include "conflux/model/adam.hpp"
#include "conflux/model/sgd.hpp"

namespace conflux::gpu::kernels {

/// w[i], v[i] updated by SGD from g[i].
struct SgdStep {
  model::SgdElement update;
  float* w;
  const float* g;
  float* v;
  CONFLUX_HD void operator()(std::size_t i) const { update(w[i], g[i], v[i]); }
};

/// w[i], m[i], v[i] updated by Adam / AdamW from g[i].
struct AdamStep {
  model::AdamScalars scalars;
  float* w;
  const float* g;
  float* m;
  float* v;
  CONFLUX_HD void operator()(std::size_t i) const {
    model::adam_element(scalars, w[i], g[i], m[i], v[i]);
  }
};

/// partial[p] = sum over chunk p of x^2, in double and in order.
struct SquarePartials {
  const float* x;
  double* partial;
  std::size_t count, parts;
  CONFLUX_HD void operator()(std::size_t p) const {
    const std::size_t begin = count * p / parts, end = count * (p + 1) / parts;
    double s = 0.0;
    for (std::size_t i = begin; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[p] = s;
  }
};

/// g[i] *= max_norm / (norm + 1e-6) when that is below 1, norm = sqrt(*sum_of_squares) in
/// float (torch.nn.utils.clip_grad_norm_, as model::clip_grad_norm).
struct ClipByNorm {
  float* g;
  const double* sum_of_squares;
  float max_norm;
  CONFLUX_HD void operator()(std::size_t i) const {
    const auto norm = static_cast<float>(sqrt(*sum_of_squares));
    const float coef = max_norm / (norm + 1e-6f);
    if (coef < 1.0f) g[i] *= coef;
  }
};

}  // namespace conflux::gpu::kernels
