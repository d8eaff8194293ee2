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

void Adam::step(std::span<float> params, std::span<const float> grads) {
  check_step(params, grads);
  ++steps_;
  // The scalars are formed as PyTorch's _single_tensor_adam forms them: in double (Python
  // floats), each rounded to float where it meets a float tensor.
  const double t = static_cast<double>(steps_);
  const double lr = options_.lr;
  const auto wd = static_cast<float>(options_.weight_decay);
  const auto decay = static_cast<float>(1.0 - lr * options_.weight_decay);
  const auto weight1 = static_cast<float>(1.0 - options_.beta1);
  const auto beta2 = static_cast<float>(options_.beta2);
  const auto weight2 = static_cast<float>(1.0 - options_.beta2);
  const auto step_size = static_cast<float>(-(lr / (1.0 - std::pow(options_.beta1, t))));
  const auto bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(options_.beta2, t)));
  const auto eps = static_cast<float>(options_.eps);
  const bool lerp_low = std::abs(weight1) < 0.5f;
  const bool coupled = wd != 0.0f && !options_.decoupled;
  const bool decoupled = wd != 0.0f && options_.decoupled;
  float* w = params.data();
  const float* g = grads.data();
  float* m = buffer(0).data();
  float* v = buffer(1).data();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (decoupled) w[i] *= decay;
    const float d = coupled ? g[i] + wd * w[i] : g[i];
    // exp_avg.lerp_(grad, 1 - beta1): torch's lerp switches formula at weight 0.5.
    const float diff = d - m[i];
    m[i] = lerp_low ? m[i] + weight1 * diff : d - diff * (1.0f - weight1);
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    v[i] = v[i] * beta2 + weight2 * d * d;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    w[i] = w[i] + step_size * m[i] / denom;
  }
}

}  // namespace conflux::model
