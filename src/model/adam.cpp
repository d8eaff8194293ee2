#include "conflux/model/adam.hpp"

#include <cmath>

#include "conflux/core/error.hpp"

namespace conflux::model {

Adam::Adam(AdamOptions options, std::size_t num_params)
    : Optimizer(num_params, {"exp_avg", "exp_avg_sq"}), options_(options) {
  CONFLUX_REQUIRE(options.lr >= 0.0, "adam: learning rate must be >= 0, got {}", options.lr);
  CONFLUX_REQUIRE(options.beta1 >= 0.0 && options.beta1 < 1.0,
                  "adam: beta1 must be in [0, 1), got {}", options.beta1);
  CONFLUX_REQUIRE(options.beta2 >= 0.0 && options.beta2 < 1.0,
                  "adam: beta2 must be in [0, 1), got {}", options.beta2);
  CONFLUX_REQUIRE(options.eps >= 0.0, "adam: eps must be >= 0, got {}", options.eps);
  CONFLUX_REQUIRE(options.weight_decay >= 0.0, "adam: weight decay must be >= 0, got {}",
                  options.weight_decay);
}

namespace {

// One step's scalars, formed as PyTorch's _single_tensor_adam forms them: in double (Python
// floats), each rounded to float where it meets a float tensor.
struct StepScalars {
  float wd, decay, weight1, beta2, weight2, step_size, bc2_sqrt, eps;
};

// One step over `n` parameters. The choices are template arguments, so that the loop has no
// branch and vectorises (src/model/adam.o is compiled with -fno-math-errno: a square root of
// the non-negative second moment never sets errno, and without that the sqrt is a call).
template <bool kCoupled, bool kDecoupled, bool kLerpLow>
void update(const StepScalars& s, std::size_t n, float* w, const float* g, float* m, float* v) {
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (kDecoupled) w[i] *= s.decay;  // param.mul_(1 - lr * weight_decay)
    float d = g[i];
    if constexpr (kCoupled) d = g[i] + s.wd * w[i];  // grad.add(param, alpha=weight_decay)
    // exp_avg.lerp_(grad, 1 - beta1): torch's lerp switches formula at weight 0.5.
    const float diff = d - m[i];
    if constexpr (kLerpLow) {
      m[i] = m[i] + s.weight1 * diff;
    } else {
      m[i] = d - diff * (1.0f - s.weight1);
    }
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    v[i] = v[i] * s.beta2 + s.weight2 * d * d;
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps);
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    const float denom = std::sqrt(v[i]) / s.bc2_sqrt + s.eps;
    w[i] = w[i] + s.step_size * m[i] / denom;
  }
}

using Update = void (*)(const StepScalars&, std::size_t, float*, const float*, float*, float*);

template <bool kLerpLow>
Update pick(bool coupled, bool decoupled) {
  if (coupled) return update<true, false, kLerpLow>;
  if (decoupled) return update<false, true, kLerpLow>;
  return update<false, false, kLerpLow>;
}

}  // namespace

void Adam::step(std::span<float> params, std::span<const float> grads) {
  check_step(params, grads);
  ++steps_;
  const double t = static_cast<double>(steps_);
  const double lr = options_.lr;
  const StepScalars s{.wd = static_cast<float>(options_.weight_decay),
                      .decay = static_cast<float>(1.0 - lr * options_.weight_decay),
                      .weight1 = static_cast<float>(1.0 - options_.beta1),
                      .beta2 = static_cast<float>(options_.beta2),
                      .weight2 = static_cast<float>(1.0 - options_.beta2),
                      .step_size = static_cast<float>(-(lr / (1.0 - std::pow(options_.beta1, t)))),
                      .bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(options_.beta2, t))),
                      .eps = static_cast<float>(options_.eps)};
  const bool decay = s.wd != 0.0f;
  const bool coupled = decay && !options_.decoupled;
  const bool decoupled = decay && options_.decoupled;
  const Update run =
      std::abs(s.weight1) < 0.5f ? pick<true>(coupled, decoupled) : pick<false>(coupled, decoupled);
  run(s, params.size(), params.data(), grads.data(), buffer(0).data(), buffer(1).data());
}

}  // namespace conflux::model
