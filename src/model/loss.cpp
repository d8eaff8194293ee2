#include "conflux/model/loss.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "conflux/core/error.hpp"

namespace conflux::model {

LossResult softmax_cross_entropy(const Tensor& logits, std::span<const Label> labels,
                                 float grad_scale, Tensor* grad_logits, double label_smoothing) {
  CONFLUX_REQUIRE(logits.shape.size() == 2 && logits.shape[1] > 0,
                  "softmax_cross_entropy expects logits [N,K] but gets [{}]",
                  fmt::join(logits.shape, ","));
  const int n = logits.shape[0];
  const int k = logits.shape[1];
  CONFLUX_REQUIRE(labels.size() == static_cast<std::size_t>(n),
                  "softmax_cross_entropy: {} labels for {} samples", labels.size(), n);
  CONFLUX_REQUIRE(label_smoothing >= 0.0 && label_smoothing < 1.0,
                  "softmax_cross_entropy: label smoothing {} is not in [0, 1)", label_smoothing);
  if (grad_logits != nullptr) grad_logits->resize({n, k});
  const double on_label = 1.0 - label_smoothing;
  const double on_every = label_smoothing / static_cast<double>(k);

  LossResult result;
  for (int i = 0; i < n; ++i) {
    const auto row = static_cast<std::size_t>(i) * k;
    const RowLoss r = softmax_cross_entropy_row(
        logits.data.data() + row, k, labels[i], on_label, on_every, grad_scale,
        grad_logits != nullptr ? grad_logits->data.data() + row : nullptr);
    CONFLUX_REQUIRE(r.status != -1, "label {} of sample {} is out of range for {} classes",
                    labels[i], i, k);
    if (r.status == 2) {
      ++result.skipped;
      continue;
    }
    result.loss_sum += r.loss;
    if (r.status == 1) ++result.correct;
  }
  return result;
}

}  // namespace conflux::model
