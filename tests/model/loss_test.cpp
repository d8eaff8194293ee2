// softmax_cross_entropy: values, accuracy count, gradient formula, numerical stability.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/model/loss.hpp"

namespace conflux::model {
namespace {

Tensor make_logits(int n, int k, std::vector<float> values) {
  Tensor t;
  t.resize({n, k});
  t.data = std::move(values);
  return t;
}

TEST(ModelLoss, HandComputedValues) {
  const Tensor logits = make_logits(2, 3, {1, 2, 3, 0, 0, 0});
  const std::vector<Label> labels{2, 0};
  Tensor grad;
  const LossResult r = softmax_cross_entropy(logits, labels, 0.5f, &grad);
  // log(e + e^2 + e^3) - 3 and log(3)
  EXPECT_NEAR(r.loss_sum, 0.4076059644443804 + 1.0986122886681098, 1e-9);
  // Row 0 predicts class 2 (right); row 1 is a three-way tie, resolved to the first maximum,
  // class 0 (right).
  EXPECT_EQ(r.correct, 2);
  ASSERT_EQ(grad.shape, std::vector<int>({2, 3}));
  const double p0[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
  EXPECT_NEAR(grad.data[0], 0.5 * p0[0], 1e-7);
  EXPECT_NEAR(grad.data[1], 0.5 * p0[1], 1e-7);
  EXPECT_NEAR(grad.data[2], 0.5 * (p0[2] - 1.0), 1e-7);
  EXPECT_NEAR(grad.data[3], 0.5 * (1.0 / 3.0 - 1.0), 1e-7);
  EXPECT_NEAR(grad.data[4], 0.5 / 3.0, 1e-7);
  EXPECT_NEAR(grad.data[5], 0.5 / 3.0, 1e-7);
}

TEST(ModelLoss, LabelSmoothingHandComputed) {
  // nn.CrossEntropyLoss(label_smoothing=0.3) on K = 3: the target of label 2 is
  // {0.1, 0.1, 0.8}; loss = -sum_j target_j log p_j with log p = x - log(e + e^2 + e^3).
  const Tensor logits = make_logits(2, 3, {1, 2, 3, 0, 0, 0});
  const std::vector<Label> labels{2, kSkippedLabel};
  Tensor grad;
  const LossResult r = softmax_cross_entropy(logits, labels, 0.5f, &grad, 0.3);
  const double lse = 3.4076059644443804;
  const double target[3] = {0.1, 0.1, 0.8};
  double expected = 0.0;
  for (int j = 0; j < 3; ++j) expected -= target[j] * ((j + 1) - lse);
  EXPECT_NEAR(expected, 0.7076059644443804, 1e-12);  // the same sum, by hand
  EXPECT_NEAR(r.loss_sum, expected, 1e-9);
  EXPECT_EQ(r.correct, 1);
  EXPECT_EQ(r.skipped, 1);
  const double p0[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(grad.data[j], 0.5 * (p0[j] - target[j]), 1e-7) << j;
    EXPECT_EQ(grad.data[3 + j], 0.0f);  // the skipped row
  }
  EXPECT_THROW(softmax_cross_entropy(logits, labels, 1.0f, nullptr, 1.0), InputError);
}

TEST(ModelLoss, LabelSmoothingGradientMatchesFiniteDifferences) {
  Tensor logits = make_logits(2, 4, {0.3f, -1.2f, 2.0f, 0.7f, -0.4f, 0.9f, 0.1f, 1.5f});
  const std::vector<Label> labels{1, 3};
  Tensor grad;
  softmax_cross_entropy(logits, labels, 1.0f, &grad, 0.2);
  for (std::size_t i = 0; i < logits.data.size(); ++i) {
    const float x = logits.data[i];
    const float h = 1e-2f;
    logits.data[i] = x + h;
    const double up = softmax_cross_entropy(logits, labels, 1.0f, nullptr, 0.2).loss_sum;
    logits.data[i] = x - h;
    const double down = softmax_cross_entropy(logits, labels, 1.0f, nullptr, 0.2).loss_sum;
    logits.data[i] = x;
    EXPECT_NEAR(grad.data[i], (up - down) / (2.0 * h), 2e-4) << i;
  }
}

TEST(ModelLoss, GradientRowsSumToZero) {
  const Tensor logits = make_logits(1, 4, {0.3f, -2.0f, 5.0f, 1.0f});
  const std::vector<Label> labels{1};
  Tensor grad;
  softmax_cross_entropy(logits, labels, 1.0f, &grad);
  double sum = 0.0;
  for (float g : grad.data) sum += g;
  EXPECT_NEAR(sum, 0.0, 1e-6);
  EXPECT_LT(grad.data[1], 0.0f);
}

TEST(ModelLoss, StableForHugeLogits) {
  const Tensor logits = make_logits(2, 3, {1000, 0, -1000, 1e30f, -1e30f, 0});
  const std::vector<Label> labels{1, 0};
  Tensor grad;
  const LossResult r = softmax_cross_entropy(logits, labels, 1.0f, &grad);
  EXPECT_TRUE(std::isfinite(r.loss_sum));
  EXPECT_NEAR(r.loss_sum, 1000.0, 1e-6);
  for (float g : grad.data) EXPECT_TRUE(std::isfinite(g));
  EXPECT_NEAR(grad.data[0], 1.0, 1e-6);
  EXPECT_NEAR(grad.data[1], -1.0, 1e-6);
  EXPECT_EQ(r.correct, 1);
}

TEST(ModelLoss, WithoutGradientAndEmptyBatch) {
  const Tensor logits = make_logits(1, 2, {0, 0});
  const std::vector<Label> labels{1};
  EXPECT_NEAR(softmax_cross_entropy(logits, labels, 1.0f, nullptr).loss_sum, std::log(2.0), 1e-12);

  Tensor empty;
  empty.resize({0, 10});
  Tensor grad;
  const LossResult r = softmax_cross_entropy(empty, {}, 1.0f, &grad);
  EXPECT_EQ(r.loss_sum, 0.0);
  EXPECT_EQ(r.correct, 0);
  EXPECT_EQ(grad.shape, std::vector<int>({0, 10}));
}

TEST(ModelLoss, RejectsBadLabels) {
  const Tensor logits = make_logits(2, 3, {0, 0, 0, 0, 0, 0});
  const std::vector<Label> out_of_range{0, 3};
  EXPECT_THROW(softmax_cross_entropy(logits, out_of_range, 1.0f, nullptr), InputError);
  const std::vector<Label> too_few{0};
  EXPECT_THROW(softmax_cross_entropy(logits, too_few, 1.0f, nullptr), InputError);
}

// A sample skipped as corrupt adds no loss, a zero gradient row, no correct count; the other
// rows are exactly what they are without it.
TEST(ModelLoss, SkippedSampleAddsNothing) {
  const Tensor with = make_logits(3, 3, {1, 2, 3, 5, -1, 0, 0, 0, 0});
  const Tensor without = make_logits(2, 3, {1, 2, 3, 0, 0, 0});
  const std::vector<Label> labels_with{2, kSkippedLabel, 0};
  const std::vector<Label> labels_without{2, 0};
  Tensor g_with, g_without;
  const LossResult a = softmax_cross_entropy(with, labels_with, 0.25f, &g_with);
  const LossResult b = softmax_cross_entropy(without, labels_without, 0.25f, &g_without);
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_EQ(a.skipped, 1);
  EXPECT_EQ(b.skipped, 0);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(g_with.data[j], g_without.data[j]);
    EXPECT_EQ(g_with.data[3 + j], 0.0f);
    EXPECT_EQ(g_with.data[6 + j], g_without.data[3 + j]);
  }
  const std::vector<Label> negative{2, -2, 0};
  EXPECT_THROW(softmax_cross_entropy(with, negative, 1.0f, nullptr), InputError);
}

}  // namespace
}  // namespace conflux::model
