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
  const SgdElement update = next_update();
  const std::size_t count = params.size();
  float* w = params.data();
  const float* g = grads.data();
  float* v = buffer(0).data();
  for (std::size_t i = 0; i < count; ++i) update(w[i], g[i], v[i]);
  ++steps_;
}

}  // namespace conflux::model
