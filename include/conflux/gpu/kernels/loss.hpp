#pragma once
/// @file loss.hpp
/// Softmax cross-entropy on a device: one thread per sample running model's
/// softmax_cross_entropy_row (the CPU's arithmetic, in double); per-sample losses and
/// statuses stay on the device until a report needs them.

#include <cstddef>
#include <cstdint>

#include "conflux/core/host_device.hpp"
#include "conflux/model/loss.hpp"

namespace conflux::gpu::kernels {

/// Sample i of logits [n, k]: loss[i], status[i] (RowLoss::status) and, when grad is set, its
/// gradient row.
struct SoftmaxCrossEntropy {
  const float* logits;
  const model::Label* labels;
  int k;
  double on_label, on_every;
  float grad_scale;
  double* loss;
  std::int32_t* status;
  float* grad;
  CONFLUX_HD void operator()(std::size_t i) const {
    const model::RowLoss r =
        model::softmax_cross_entropy_row(logits + i * k, k, labels[i], on_label, on_every,
                                         grad_scale, grad != nullptr ? grad + i * k : nullptr);
    loss[i] = r.loss;
    status[i] = r.status;
  }
};

}  // namespace conflux::gpu::kernels
