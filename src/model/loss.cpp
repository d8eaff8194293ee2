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
  // Without smoothing the target is exactly one-hot (1 - 0 and 0 / K): the same bits as ever.
  const double on_label = 1.0 - label_smoothing;
  const double on_every = label_smoothing / static_cast<double>(k);

  LossResult result;
  for (int i = 0; i < n; ++i) {
    const float* x = logits.data.data() + static_cast<std::size_t>(i) * k;
    const int label = labels[i];
    if (label == kSkippedLabel) {
      ++result.skipped;
      if (grad_logits != nullptr) {
        std::fill_n(grad_logits->data.data() + static_cast<std::size_t>(i) * k, k, 0.0f);
      }
      continue;
    }
    CONFLUX_REQUIRE(label >= 0 && label < k, "label {} of sample {} is out of range for {} classes",
                    label, i, k);
    int arg = 0;  // first maximum, so ties resolve like argmax in NumPy/PyTorch
    for (int j = 1; j < k; ++j)
      if (x[j] > x[arg]) arg = j;
    const double max = x[arg];
    // log-sum-exp shifted by the maximum: every exponent is <= 0, so nothing overflows and
    // the largest term is exactly 1, so the sum never underflows to 0.
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(x[j]) - max);
    const double log_sum = std::log(sum);
    const double nll_label = log_sum + max - static_cast<double>(x[label]);
    if (label_smoothing == 0.0) {
      result.loss_sum += nll_label;
    } else {
      double nll_all = 0.0;
      for (int j = 0; j < k; ++j) nll_all += log_sum + max - static_cast<double>(x[j]);
      result.loss_sum += on_label * nll_label + on_every * nll_all;
    }
    if (arg == label) ++result.correct;
    if (grad_logits != nullptr) {
      float* g = grad_logits->data.data() + static_cast<std::size_t>(i) * k;
      for (int j = 0; j < k; ++j) {
        const double p = std::exp(static_cast<double>(x[j]) - max - log_sum);
        const double target = (j == label ? on_label : 0.0) + on_every;
        g[j] = static_cast<float>(grad_scale * (p - target));
      }
    }
  }
  return result;
}

}  // namespace conflux::model
