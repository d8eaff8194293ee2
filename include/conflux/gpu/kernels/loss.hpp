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

/// Adds one batch's per-sample results to the running totals, in sample order and in double
/// (the order the host sums a step's losses in): total[0] += the batch's loss sum;
/// counts[0] += correct, counts[1] += skipped; counts[2] is set to 1 + the first sample whose
/// label was out of range, when none was before. One thread: a batch is a few hundred values,
/// and the totals stay on the device until a report asks for them.
struct AccumulateLoss {
  const double* loss;
  const std::int32_t* status;
  std::size_t n;
  double* total;
  std::int64_t* counts;
  CONFLUX_HD void operator()(std::size_t) const {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (status[i] == -1) {
        if (counts[2] == 0) counts[2] = static_cast<std::int64_t>(i) + 1;
        continue;
      }
      if (status[i] == 2) {
        ++counts[1];
        continue;
      }
      sum += loss[i];
      if (status[i] == 1) ++counts[0];
    }
    total[0] += sum;
  }
};

}  // namespace conflux::gpu::kernels
