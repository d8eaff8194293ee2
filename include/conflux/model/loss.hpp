#pragma once
/// @file loss.hpp
/// Softmax cross-entropy on logits [N, K] with integer labels.

#include <cmath>
#include <cstdint>
#include <span>

#include "conflux/core/host_device.hpp"

#include "conflux/model/tensor.hpp"

namespace conflux::model {

/// Result of a loss evaluation over one batch.
struct LossResult {
  double loss_sum = 0;  ///< sum (not mean) of per-sample losses
  int correct = 0;      ///< samples whose arg-max logit equals the label
  int skipped = 0;      ///< samples labelled kSkippedLabel (no loss, no gradient)
};

/// Numerically stable softmax cross-entropy. Returns the summed loss and the number of
/// correct predictions. When grad_logits is non-null, writes dL/dlogits for
/// L = grad_scale * sum_i loss_i, i.e. grad_scale * (softmax - onehot); pass
/// grad_scale = 1 / global_batch so that gradients summed over ranks are the global mean.
/// A sample labelled kSkippedLabel (skipped as corrupt) adds nothing: no loss, a zero gradient
/// row, not counted as correct; it is counted in `skipped`.
/// `label_smoothing` eps in [0, 1) is nn.CrossEntropyLoss(label_smoothing=eps): the target is
/// (1 - eps) on the label plus eps / K on every class, so loss_i = (1 - eps) * nll(label) +
/// eps / K * sum_j nll(j) and dL/dlogit_j = grad_scale * (softmax_j - target_j).
LossResult softmax_cross_entropy(const Tensor& logits, std::span<const Label> labels,
                                 float grad_scale, Tensor* grad_logits,
                                 double label_smoothing = 0.0);

/// One sample's part of softmax_cross_entropy.
struct RowLoss {
  double loss = 0;  ///< this sample's loss (0 when skipped or out of range)
  /// 1: the first arg-max logit is the label; 0: it is not; 2: skipped (kSkippedLabel); -1:
  /// the label is out of range (the caller reports it).
  int status = 0;
};

/// Softmax cross-entropy of one row of `k` logits, in double (shifted by the maximum), with
/// its gradient row when `grad` is set: the one implementation every device runs (the CPU
/// loop above, the GPU kernel one thread per row). `on_label` = 1 - label_smoothing,
/// `on_every` = label_smoothing / k.
CONFLUX_HD inline RowLoss softmax_cross_entropy_row(const float* x, int k, Label label,
                                                    double on_label, double on_every,
                                                    float grad_scale, float* grad) {
  if (label == kSkippedLabel || label < 0 || label >= k) {
    if (grad != nullptr) {
      for (int j = 0; j < k; ++j) grad[j] = 0.0f;
    }
    return {0.0, label == kSkippedLabel ? 2 : -1};
  }
  int arg = 0;  // first maximum, so ties resolve like argmax in NumPy/PyTorch
  for (int j = 1; j < k; ++j)
    if (x[j] > x[arg]) arg = j;
  const double max = x[arg];
  // log-sum-exp shifted by the maximum: every exponent is <= 0, so nothing overflows and
  // the largest term is exactly 1, so the sum never underflows to 0.
  double sum = 0.0;
  for (int j = 0; j < k; ++j) sum += exp(static_cast<double>(x[j]) - max);
  const double log_sum = log(sum);
  const double nll_label = log_sum + max - static_cast<double>(x[label]);
  RowLoss row{nll_label, arg == label ? 1 : 0};
  // Without smoothing the target is exactly one-hot (1 - 0 and 0 / K): the same bits as ever.
  if (on_every != 0.0) {
    double nll_all = 0.0;
    for (int j = 0; j < k; ++j) nll_all += log_sum + max - static_cast<double>(x[j]);
    row.loss = on_label * nll_label + on_every * nll_all;
  }
  if (grad != nullptr) {
    for (int j = 0; j < k; ++j) {
      const double p = exp(static_cast<double>(x[j]) - max - log_sum);
      const double target = (j == label ? on_label : 0.0) + on_every;
      grad[j] = static_cast<float>(grad_scale * (p - target));
    }
  }
  return row;
}

}  // namespace conflux::model
