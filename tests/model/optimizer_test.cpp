// SGD with Nesterov, Adam and AdamW against their published update rules (PyTorch's forms),
// computed here in double from scalar formulas; state save/restore; clipping by global norm.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/model/adam.hpp"
#include "conflux/model/optimizer.hpp"
#include "conflux/model/sgd.hpp"

namespace conflux::model {
namespace {

constexpr float kTol = 2e-6f;

// Gradients of three steps for two parameters.
const std::vector<std::vector<float>> kGrads = {{0.5f, -1.0f}, {0.2f, 0.4f}, {-0.3f, 0.1f}};

TEST(ModelOptimizer, NesterovMatchesItsFormula) {
  // The first step by hand: d = 0.5 + 0.01 * 1 = 0.51, v = d, w = 1 - 0.1 * (0.51 + 0.9 * 0.51).
  Sgd sgd({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true}, 2);
  std::vector<float> w = {1.0f, -2.0f};
  sgd.step(w, kGrads[0]);
  EXPECT_NEAR(w[0], 0.9031f, kTol);
  // Three steps against the rule in double.
  sgd = Sgd({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true}, 2);
  w = {1.0f, -2.0f};
  double rw[2] = {1.0, -2.0}, rv[2] = {0, 0};
  for (std::size_t s = 0; s < kGrads.size(); ++s) {
    sgd.step(w, kGrads[s]);
    for (int i = 0; i < 2; ++i) {
      const double d = kGrads[s][i] + 0.01 * rw[i];
      rv[i] = s == 0 ? d : 0.9 * rv[i] + d;
      rw[i] -= 0.1 * (d + 0.9 * rv[i]);
      EXPECT_NEAR(w[i], rw[i], kTol) << "step " << s << " param " << i;
      EXPECT_NEAR(sgd.velocity()[i], rv[i], kTol);
    }
  }
  EXPECT_EQ(sgd.steps(), 3u);
  EXPECT_THROW(Sgd({.lr = 0.1f, .nesterov = true}, 1), InputError);  // PyTorch's rule
}

// Adam (Kingma & Ba) with PyTorch's placement of eps and its two kinds of weight decay.
struct AdamReference {
  double lr, b1, b2, eps, wd;
  bool decoupled;
  std::vector<double> w, m, v;
  int t = 0;
  void step(const std::vector<float>& g) {
    ++t;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (decoupled) w[i] *= 1.0 - lr * wd;
      const double d = decoupled ? g[i] : g[i] + wd * w[i];
      m[i] = b1 * m[i] + (1.0 - b1) * d;
      v[i] = b2 * v[i] + (1.0 - b2) * d * d;
      const double m_hat = m[i] / (1.0 - std::pow(b1, t));
      const double v_hat = v[i] / (1.0 - std::pow(b2, t));
      w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

void expect_adam_follows_reference(const AdamOptions& o) {
  Adam adam(o, 2);
  std::vector<float> w = {1.0f, -2.0f};
  AdamReference ref{o.lr,        o.beta1,     o.beta2, o.eps, o.weight_decay,
                    o.decoupled, {1.0, -2.0}, {0, 0},  {0, 0}};
  for (int s = 0; s < 6; ++s) {
    const std::vector<float>& g = kGrads[static_cast<std::size_t>(s) % kGrads.size()];
    adam.step(w, g);
    ref.step(g);
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(w[i], ref.w[i], kTol) << adam.name() << " step " << s << " param " << i;
      EXPECT_NEAR(adam.exp_avg()[i], ref.m[i], 1e-6);
      EXPECT_NEAR(adam.exp_avg_sq()[i], ref.v[i], 1e-7);
    }
  }
}

TEST(ModelOptimizer, AdamFirstStepIsLrTimesTheSign) {
  // Bias correction makes the first update lr * g / (|g| + eps): w moves by lr against g.
  Adam adam({.lr = 0.01}, 2);
  std::vector<float> w = {1.0f, -2.0f};
  adam.step(w, kGrads[0]);
  EXPECT_NEAR(w[0], 0.99f, kTol);
  EXPECT_NEAR(w[1], -1.99f, kTol);
  EXPECT_EQ(adam.name(), "adam");
}

TEST(ModelOptimizer, AdamAndAdamWFollowThePublishedRule) {
  expect_adam_follows_reference({.lr = 0.01});
  expect_adam_follows_reference({.lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-3});
  expect_adam_follows_reference({.lr = 0.01, .weight_decay = 0.1});
  expect_adam_follows_reference({.lr = 0.01, .weight_decay = 0.1, .decoupled = true});
  expect_adam_follows_reference({.lr = 0.02, .beta1 = 0.3, .weight_decay = 0.5, .decoupled = true});
}

TEST(ModelOptimizer, AdamWDecaysOutsideTheMoments) {
  // AdamW's first step: w = 1 * (1 - 0.01 * 0.1) - 0.01 = 0.989; Adam's coupled decay only
  // changes g, and the first step's move is still lr: 0.99.
  std::vector<float> adamw_w = {1.0f}, adam_w = {1.0f};
  Adam adamw({.lr = 0.01, .weight_decay = 0.1, .decoupled = true}, 1);
  Adam adam({.lr = 0.01, .weight_decay = 0.1}, 1);
  adamw.step(adamw_w, std::vector<float>{0.5f});
  adam.step(adam_w, std::vector<float>{0.5f});
  EXPECT_NEAR(adamw_w[0], 0.989f, kTol);
  EXPECT_NEAR(adam_w[0], 0.99f, kTol);
  EXPECT_EQ(adamw.name(), "adamw");
  EXPECT_NEAR(adamw.exp_avg()[0], 0.05f, 1e-7f);  // the moments saw g alone
  EXPECT_NEAR(adam.exp_avg()[0], 0.06f, 1e-7f);   // g + wd * w
}

TEST(ModelOptimizer, SavedStateContinuesBitIdentically) {
  for (const char* kind : {"sgd", "adam", "adamw"}) {
    TrainSection train;
    train.optimizer = kind;
    train.lr = 0.01;
    train.weight_decay = 0.01;
    if (train.optimizer == "sgd") {
      train.momentum = 0.9;
      train.nesterov = true;
    }
    auto a = make_optimizer(train, 2);
    auto b = make_optimizer(train, 2);
    EXPECT_EQ(a->name(), kind);
    std::vector<float> wa = {1.0f, -2.0f};
    a->step(wa, kGrads[0]);
    a->step(wa, kGrads[1]);
    OptimizerState saved;
    a->save(saved);
    EXPECT_EQ(saved.name, kind);
    EXPECT_EQ(saved.steps, 2u);
    EXPECT_EQ(saved.buffers.size(), train.optimizer == "sgd" ? 1u : 2u);
    std::vector<float> wb = wa;
    b->restore(saved);
    a->step(wa, kGrads[2]);
    b->step(wb, kGrads[2]);
    EXPECT_EQ(wa, wb) << kind;
    // Another optimiser's state is an input error; a damaged one a runtime error.
    TrainSection other = train;
    other.optimizer = train.optimizer == "adam" ? "adamw" : "adam";
    other.momentum = 0;
    other.nesterov = false;
    EXPECT_THROW(make_optimizer(other, 2)->restore(saved), InputError);
    saved.buffers[0].values.pop_back();
    EXPECT_THROW(b->restore(saved), RuntimeError);
  }
}

TEST(ModelOptimizer, ClipGradNormScalesOnlyAboveTheThreshold) {
  std::vector<float> g = {3.0f, 4.0f};  // norm 5
  EXPECT_FLOAT_EQ(clip_grad_norm(g, 10.0f), 5.0f);
  EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f}));  // untouched, bit for bit
  EXPECT_FLOAT_EQ(clip_grad_norm(g, 1.0f), 5.0f);
  // PyTorch's coefficient max_norm / (norm + 1e-6).
  EXPECT_NEAR(g[0], 3.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(g[1], 4.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(std::hypot(g[0], g[1]), 1.0, 1e-6);
  std::vector<float> zero(3, 0.0f);
  EXPECT_EQ(clip_grad_norm(zero, 1.0f), 0.0f);
  EXPECT_EQ(zero, std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace conflux::model
