#pragma once
// A training callback for resume tests: captures the training state after a given global step
// and stops training there.

#include <cstddef>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::testing {

class StopAndCapture final : public train::TrainingCallback {
 public:
  explicit StopAndCapture(std::size_t at) : at_(at) {}
  void on_step_end(train::StepContext& context) override {
    if (context.global_step() != at_) return;
    context.capture(state);
    context.request_stop();
  }
  ckpt::TrainingState state;  ///< the state after step `at`

 private:
  std::size_t at_;
};

}  // namespace conflux::testing
