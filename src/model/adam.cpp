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

// One step over `n` parameters (src/model/adam.o is compiled with -fno-math-errno: a square
// root of the non-negative second moment never sets errno, and without that the sqrt is a
// call, and the loop does not vectorise).
template <bool kCoupled, bool kDecoupled, bool kLerpLow>
void update(const AdamScalars& s, std::size_t n, float* w, const float* g, float* m, float* v) {
  for (std::size_t i = 0; i < n; ++i)
    adam_element<kCoupled, kDecoupled, kLerpLow>(s, w[i], g[i], m[i], v[i]);
}

using Update = void (*)(const AdamScalars&, std::size_t, float*, const float*, float*, float*);

template <bool kLerpLow>
Update pick(bool coupled, bool decoupled) {
  if (coupled) return update<true, false, kLerpLow>;
  if (decoupled) return update<false, true, kLerpLow>;
  return update<false, false, kLerpLow>;
}

}  // namespace

AdamScalars adam_scalars(const AdamOptions& options, std::uint64_t step) {
  const double t = static_cast<double>(step);
  const double lr = options.lr;
  AdamScalars s{.wd = static_cast<float>(options.weight_decay),
                .decay = static_cast<float>(1.0 - lr * options.weight_decay),
                .weight1 = static_cast<float>(1.0 - options.beta1),
                .beta2 = static_cast<float>(options.beta2),
                .weight2 = static_cast<float>(1.0 - options.beta2),
                .step_size = static_cast<float>(-(lr / (1.0 - std::pow(options.beta1, t)))),
                .bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(options.beta2, t))),
                .eps = static_cast<float>(options.eps),
                .coupled = false,
                .decoupled = false,
                .lerp_low = false};
  const bool decay = s.wd != 0.0f;
  s.coupled = decay && !options.decoupled;
  s.decoupled = decay && options.decoupled;
  s.lerp_low = std::abs(s.weight1) < 0.5f;
  return s;
}

void Adam::step(std::span<float> params, std::span<const float> grads) {
  check_step(params, grads);
  const AdamScalars s = next_scalars();
  ++steps_;
  const Update run =
      s.lerp_low ? pick<true>(s.coupled, s.decoupled) : pick<false>(s.coupled, s.decoupled);
  run(s, params.size(), params.data(), grads.data(), buffer(0).data(), buffer(1).data());
}

}  // namespace conflux::model
