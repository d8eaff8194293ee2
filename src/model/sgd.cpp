#include "conflux/model/sgd.hpp"

#include "conflux/core/error.hpp"

namespace conflux::model {

Sgd::Sgd(SgdOptions options, std::size_t num_params)
    : options_(options), velocity_(num_params, 0.0f) {
  CONFLUX_REQUIRE(options.lr >= 0.0f, "sgd: learning rate must be >= 0, got {}", options.lr);
  CONFLUX_REQUIRE(options.momentum >= 0.0f, "sgd: momentum must be >= 0, got {}", options.momentum);
  CONFLUX_REQUIRE(options.weight_decay >= 0.0f, "sgd: weight decay must be >= 0, got {}",
                  options.weight_decay);
}

void Sgd::restore(std::span<const float> velocity, bool started) {
  CONFLUX_CHECK(velocity.size() == velocity_.size(),
                "sgd: restoring {} momentum values into an optimiser of {}", velocity.size(),
                velocity_.size());
  velocity_.assign(velocity.begin(), velocity.end());
  first_step_ = !started;
}

void Sgd::step(std::span<float> params, std::span<const float> grads) {
  CONFLUX_CHECK(params.size() == velocity_.size() && grads.size() == velocity_.size(),
                "sgd: step on {} parameters / {} gradients, optimiser has {}", params.size(),
                grads.size(), velocity_.size());
  const float lr = options_.lr;
  const float mu = options_.momentum;
  const float wd = options_.weight_decay;
  const std::size_t count = params.size();
  float* w = params.data();
  const float* g = grads.data();
  float* v = velocity_.data();
  // Mirrors torch.optim.SGD (dampening 0, no Nesterov) operation by operation, including
  // skipping the decay term when wd == 0 and the buffer when momentum == 0, so that results
  // match bit for bit where the arithmetic is the same.
  if (mu == 0.0f) {
    for (std::size_t i = 0; i < count; ++i) {
      const float d = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      w[i] -= lr * d;
    }
  } else if (first_step_) {
    for (std::size_t i = 0; i < count; ++i) {
      const float d = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      v[i] = d;
      w[i] -= lr * d;
    }
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      const float d = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      v[i] = mu * v[i] + d;
      w[i] -= lr * v[i];
    }
  }
  first_step_ = false;
}

}  // namespace conflux::model
