#include "conflux/model/optimizer.hpp"

#include <cmath>

#include "conflux/core/error.hpp"
#include "conflux/model/adam.hpp"
#include "conflux/model/sgd.hpp"

namespace conflux::model {

Optimizer::Optimizer(std::size_t num_params, std::initializer_list<const char*> buffer_names)
    : num_params_(num_params) {
  for (const char* name : buffer_names) {
    buffers_.push_back({name, std::vector<float>(num_params, 0.0f)});
  }
}

void Optimizer::check_step(std::span<float> params, std::span<const float> grads) const {
  CONFLUX_CHECK(params.size() == num_params_ && grads.size() == num_params_,
                "{}: step on {} parameters / {} gradients, optimiser has {}", name(), params.size(),
                grads.size(), num_params_);
}

void Optimizer::save(OptimizerState& out) const {
  out.name = std::string(name());
  out.steps = steps_;
  out.buffers.resize(buffers_.size());
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    out.buffers[i].name = buffers_[i].name;
    out.buffers[i].values.assign(buffers_[i].values.begin(), buffers_[i].values.end());
  }
}

void Optimizer::restore(const OptimizerState& state) {
  CONFLUX_REQUIRE(state.name == name(),
                  "the saved optimiser state is {}'s, but this run's train.optimizer is \"{}\"",
                  state.name, name());
  CONFLUX_CHECK(state.buffers.size() == buffers_.size(),
                "{}: restoring {} state buffers into an optimiser of {}", name(),
                state.buffers.size(), buffers_.size());
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const OptimizerBuffer& b = state.buffers[i];
    CONFLUX_CHECK(b.name == buffers_[i].name && b.values.size() == num_params_,
                  "{}: restoring buffer {} '{}' of {} values, expected '{}' of {}", name(), i,
                  b.name, b.values.size(), buffers_[i].name, num_params_);
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i].values = state.buffers[i].values;
  steps_ = state.steps;
}

std::unique_ptr<Optimizer> make_optimizer(const TrainSection& train, std::size_t num_params) {
  if (train.optimizer == "adam" || train.optimizer == "adamw") {
    return std::make_unique<Adam>(AdamOptions{.lr = train.lr,
                                              .beta1 = train.adam_beta1,
                                              .beta2 = train.adam_beta2,
                                              .eps = train.adam_eps,
                                              .weight_decay = train.weight_decay,
                                              .decoupled = train.optimizer == "adamw"},
                                  num_params);
  }
  CONFLUX_CHECK(train.optimizer == "sgd", "train.optimizer = '{}' (want sgd, adam or adamw)",
                train.optimizer);
  return std::make_unique<Sgd>(SgdOptions{.lr = static_cast<float>(train.lr),
                                          .momentum = static_cast<float>(train.momentum),
                                          .weight_decay = static_cast<float>(train.weight_decay),
                                          .nesterov = train.nesterov},
                               num_params);
}

std::size_t optimizer_state_buffers(const std::string& name) noexcept {
  return name == "adam" || name == "adamw" ? 2 : 1;
}

double sum_of_squares(std::span<const float> values) noexcept {
  // Four interleaved partial sums in a fixed order: the same bits on every replica, and the
  // additions are not one dependent chain.
  double part[4] = {0.0, 0.0, 0.0, 0.0};
  const std::size_t n = values.size();
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (std::size_t k = 0; k < 4; ++k) {
      part[k] += static_cast<double>(values[i + k]) * static_cast<double>(values[i + k]);
    }
  }
  for (; i < n; ++i) part[0] += static_cast<double>(values[i]) * static_cast<double>(values[i]);
  return (part[0] + part[1]) + (part[2] + part[3]);
}

float clip_grad_norm(std::span<float> grads, float max_norm) noexcept {
  const auto norm = static_cast<float>(std::sqrt(sum_of_squares(grads)));
  // As torch.nn.utils.clip_grad_norm_: coefficient in float, clamped to 1 (a product with 1 is
  // exact, so it is skipped).
  const float coef = max_norm / (norm + 1e-6f);
  if (coef < 1.0f) {
    for (float& g : grads) g *= coef;
  }
  return norm;
}

}  // namespace conflux::model
