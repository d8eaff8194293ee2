// Sgd against hand-computed PyTorch-style updates.

#include <gtest/gtest.h>

#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/model/sgd.hpp"

namespace conflux::model {
namespace {

// Float rounding over three steps of O(1) values.
constexpr float kTol = 1e-6f;

TEST(ModelSgd, MomentumAndWeightDecayThreeSteps) {
  // lr 0.1, momentum 0.9, weight decay 0.01, computed by hand:
  //   d = g + 0.01 w;  v = d (step 1) else 0.9 v + d;  w -= 0.1 v
  Sgd sgd({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f}, 2);
  std::vector<float> w{1.0f, -2.0f};

  sgd.step(w, std::vector<float>{0.5f, -1.0f});
  // d = [0.51, -1.02] = v
  EXPECT_NEAR(sgd.velocity()[0], 0.51f, kTol);
  EXPECT_NEAR(sgd.velocity()[1], -1.02f, kTol);
  EXPECT_NEAR(w[0], 0.949f, kTol);
  EXPECT_NEAR(w[1], -1.898f, kTol);

  sgd.step(w, std::vector<float>{0.2f, 0.4f});
  // d = [0.20949, 0.38102]; v = [0.459 + 0.20949, -0.918 + 0.38102] = [0.66849, -0.53698]
  EXPECT_NEAR(sgd.velocity()[0], 0.66849f, kTol);
  EXPECT_NEAR(sgd.velocity()[1], -0.53698f, kTol);
  EXPECT_NEAR(w[0], 0.882151f, kTol);
  EXPECT_NEAR(w[1], -1.844302f, kTol);

  sgd.step(w, std::vector<float>{-0.3f, 0.0f});
  // d = [-0.29117849, -0.01844302]; v = [0.601641 - 0.29117849, -0.483282 - 0.01844302]
  EXPECT_NEAR(sgd.velocity()[0], 0.31046251f, kTol);
  EXPECT_NEAR(sgd.velocity()[1], -0.50172502f, kTol);
  EXPECT_NEAR(w[0], 0.851104749f, kTol);
  EXPECT_NEAR(w[1], -1.794129498f, kTol);
}

TEST(ModelSgd, PlainSgdAndLearningRateChange) {
  Sgd sgd({.lr = 0.5f}, 3);
  std::vector<float> w{1.0f, 2.0f, 3.0f};
  sgd.step(w, std::vector<float>{1.0f, -2.0f, 0.0f});
  EXPECT_EQ(w, std::vector<float>({0.5f, 3.0f, 3.0f}));
  sgd.set_lr(0.25f);
  EXPECT_EQ(sgd.options().lr, 0.25f);
  sgd.step(w, std::vector<float>{1.0f, -2.0f, 0.0f});
  EXPECT_EQ(w, std::vector<float>({0.25f, 3.5f, 3.0f}));
}

TEST(ModelSgd, WeightDecayWithoutMomentum) {
  Sgd sgd({.lr = 0.1f, .weight_decay = 0.5f}, 1);
  std::vector<float> w{2.0f};
  sgd.step(w, std::vector<float>{0.0f});  // d = 0 + 0.5 * 2 = 1
  EXPECT_NEAR(w[0], 1.9f, kTol);
  sgd.step(w, std::vector<float>{1.0f});  // d = 1 + 0.95 = 1.95
  EXPECT_NEAR(w[0], 1.705f, kTol);
}

TEST(ModelSgd, Validation) {
  EXPECT_THROW(Sgd({.lr = -1.0f}, 1), InputError);
  EXPECT_THROW(Sgd({.lr = 0.1f, .momentum = -0.5f}, 1), InputError);
  EXPECT_THROW(Sgd({.lr = 0.1f, .weight_decay = -1.0f}, 1), InputError);
  Sgd sgd({}, 2);
  std::vector<float> w(3);
  EXPECT_THROW(sgd.step(w, std::vector<float>(3)), RuntimeError);
}

}  // namespace
}  // namespace conflux::model
