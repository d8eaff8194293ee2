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
LossResult softmax_cross_entropy(const Tensor& logits, std::span<const Label> labels,
                                 float grad_scale, Tensor* grad_logits);

}  // namespace conflux::model
