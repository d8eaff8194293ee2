#pragma once
/// @file device_optimizer.hpp
/// The optimiser of a device model: model::make_optimizer's optimiser (the same options,
/// checks, learning rate, step count and saved state) whose state buffers live on the device
/// and whose update runs there, one launch over every parameter, with the CPU's element
/// update (model::SgdElement, model::adam_element).

#include <cstddef>
#include <memory>
#include <vector>

#include "conflux/config/sections.hpp"
#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/kernels/optimizer.hpp"
#include "conflux/model/adam.hpp"
#include "conflux/model/optimizer.hpp"
#include "conflux/model/sgd.hpp"

namespace conflux::gpu {

template <class Ex>
class DeviceOptimizer {
 public:
  /// The optimiser [train] configures, for `num_params` parameters on `ex`, state zero.
  DeviceOptimizer(Ex& ex, const TrainSection& train, std::size_t num_params)
      : ex_(&ex), host_(model::make_optimizer(train, num_params)), num_params_(num_params) {
    model::OptimizerState empty;
    host_->save(empty);  // the buffer names and count, zero-filled on the host
    for (std::size_t b = 0; b < empty.buffers.size(); ++b) {
      buffers_.emplace_back(num_params);
      ex.zero(buffers_.back().data(), num_params);
    }
  }

  std::string_view name() const noexcept { return host_->name(); }
  double lr() const noexcept { return host_->lr(); }
  void set_lr(double lr) noexcept { host_->set_lr(lr); }
  std::uint64_t steps() const noexcept { return host_->steps(); }

  /// One update of `params` from `grads` (device memory, num_params floats each); enqueued.
  void step(float* params, const float* grads) {
    if (auto* sgd = dynamic_cast<model::Sgd*>(host_.get())) {
      ex_->for_each(num_params_,
                    kernels::SgdStep{sgd->next_update(), params, grads, buffers_[0].data()});
    } else {
      auto* adam = dynamic_cast<model::Adam*>(host_.get());
      CONFLUX_CHECK(adam != nullptr, "device optimizer: no device update for {}", host_->name());
      ex_->for_each(num_params_, kernels::AdamStep{adam->next_scalars(), params, grads,
                                                   buffers_[0].data(), buffers_[1].data()});
    }
    host_->count_step();
  }

  /// The optimiser's state as a checkpoint holds it (downloads the buffers; waits).
  void save(model::OptimizerState& out) {
    host_->save(out);
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      ex_->download(out.buffers[b].values.data(), buffers_[b].data(), num_params_);
    }
    ex_->synchronize();
  }

  /// Resumes from `state`, checked as model::Optimizer::restore checks it (InputError for
  /// another optimiser's state).
  void restore(const model::OptimizerState& state) {
    host_->restore(state);
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      ex_->upload(buffers_[b].data(), state.buffers[b].values.data(), num_params_);
    }
    ex_->synchronize();  // the upload read `state`
  }

 private:
  Ex* ex_;
  // The optimiser itself: options, learning rate, step count, names; its host buffers are only
  // the staging of save() and restore().
  std::unique_ptr<model::Optimizer> host_;
  std::size_t num_params_;
  std::vector<typename Ex::template Buffer<float>> buffers_;
};

}  // namespace conflux::gpu
