#pragma once
/// @file loss.hpp
/// Softmax cross-entropy on logits [N, K] with integer labels.

#include <cstdint>
#include <span>

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

}  // namespace conflux::model
