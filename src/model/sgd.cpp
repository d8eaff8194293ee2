#include "conflux/model/sgd.hpp"

#include "conflux/core/error.hpp"

namespace conflux::model {

Sgd::Sgd(SgdOptions options, std::size_t num_params)
    : Optimizer(num_params, {kSgdMomentumBuffer}), options_(options) {
  CONFLUX_REQUIRE(options.lr >= 0.0f, "sgd: learning rate must be >= 0, got {}", options.lr);
  CONFLUX_REQUIRE(options.momentum >= 0.0f, "sgd: momentum must be >= 0, got {}", options.momentum);
  CONFLUX_REQUIRE(options.weight_decay >= 0.0f, "sgd: weight decay must be >= 0, got {}",
                  options.weight_decay);
  CONFLUX_REQUIRE(!options.nesterov || options.momentum > 0.0f,
                  "sgd: Nesterov momentum needs a momentum > 0 (as in PyTorch)");
}

void Sgd::step(std::span<float> params, std::span<const float> grads) {
  check_step(params, grads);
  const float lr = options_.lr;
  const float mu = options_.momentum;
  const float wd = options_.weight_decay;
  const std::size_t count = params.size();
  float* w = params.data();
  const float* g = grads.data();
  float* v = buffer(0).data();
  // Mirrors torch.optim.SGD (dampening 0) operation by operation, including skipping the decay
  // term when wd == 0 and the buffer when momentum == 0, so that results match bit for bit
  // where the arithmetic is the same.
  if (mu == 0.0f) {
    for (std::size_t i = 0; i < count; ++i) {
      const float d = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      w[i] -= lr * d;
    }
  } else if (options_.nesterov) {
    const bool first = steps_ == 0;
    for (std::size_t i = 0; i < count; ++i) {
      const float d = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      v[i] = first ? d : mu * v[i] + d;
      w[i] -= lr * (d + mu * v[i]);
    }
  } else if (steps_ == 0) {
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
  ++steps_;
}

}  // namespace conflux::model
