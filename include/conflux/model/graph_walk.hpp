#pragma once
/// @file graph_walk.hpp
/// The forward and backward walks of a model's graph, written once for every device: the CPU
/// model (model::Model, on Tensors and Layer objects) and the GPU model (gpu::DeviceModel, on
/// device tensors and CUDA kernels) run the same plan through the same walk, so that the
/// order of the layer calls, ReLU fusion and the summation order of a gradient that several
/// layers feed are the same on both (docs/design.md, "One model, kernels per device").

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/model/graph.hpp"

namespace conflux::model {

/// What the walk needs to know of a model, computed once from its specs (Model builds it).
struct GraphPlan {
  std::vector<std::vector<std::size_t>> inputs;  ///< per layer: layer indices or kModelInput
  std::vector<std::size_t> order;                ///< execution order
  std::vector<bool> needs_grad;                  ///< per layer: its output's gradient is needed
  /// Per layer: the layer whose output tensor holds this one's (itself, or for a ReLU fused
  /// into the layer feeding it, that layer: the ReLU is not called).
  std::vector<std::size_t> holder;
  /// Layers in the model.
  std::size_t size() const noexcept { return inputs.size(); }
  /// Layer `i` runs (is not a ReLU fused into another layer).
  bool runs(std::size_t i) const noexcept { return holder[i] == i; }
};

/// One device's tensors of a walk and its layer calls. `Calls` provides
///   void forward(std::size_t layer, std::span<const T* const> in, T& out);
///   void backward(std::size_t layer, std::span<const T* const> in, const T& grad_out,
///                 std::span<T* const> grad_in);   // nullptr: that input's gradient unneeded
///   void accumulate(T& sum, const T& add);        // sum += add, element by element
///   void release(T& gradient);  // optional: backward is done with this output gradient
/// and T is the device's tensor type (default-constructible; layers size their outputs).
template <class T>
class GraphWalk {
 public:
  /// A walk of a plan of `layers` layers; every call passes that plan (the walk holds no
  /// pointer to it, so that the model owning both can move).
  explicit GraphWalk(std::size_t layers)
      : activations_(layers), gradients_(layers), written_(layers, false) {}

  /// Runs every layer in plan order on `input` (kept by pointer until backward()); returns
  /// the last layer's output.
  template <class Calls>
  const T& forward(const GraphPlan& plan, const T& input, Calls& calls) {
    input_ = &input;
    for (const std::size_t i : plan.order) {
      if (!plan.runs(i)) continue;
      ins_.clear();
      for (const std::size_t in : plan.inputs[i])
        ins_.push_back(in == kModelInput ? &input : &activations_[plan.holder[in]]);
      calls.forward(i, std::span<const T* const>(ins_), activations_[i]);
    }
    return activations_.back();
  }

  /// Runs the backward pass of every layer whose output's gradient is needed, last layer
  /// first, from dL/d(last output). The first consumer of an output (in backward order)
  /// writes its gradient in place; later ones write scratch that is added to it, in that
  /// fixed order.
  template <class Calls>
  void backward(const GraphPlan& plan, const T& grad_logits, Calls& calls) {
    CONFLUX_CHECK(input_ != nullptr, "GraphWalk::backward called before forward");
    std::fill(written_.begin(), written_.end(), false);
    for (auto it = plan.order.rbegin(); it != plan.order.rend(); ++it) {
      const std::size_t i = *it;
      if (!plan.needs_grad[i] || !plan.runs(i)) continue;
      backward_layer(plan, i, i + 1 == plan.size() ? grad_logits : gradients_[i], calls);
      // Layer i's output gradient has no reader left: a device that plans its memory takes the
      // buffer back for the gradients still to come (the CPU keeps it for the next step).
      if constexpr (requires { calls.release(gradients_[i]); }) {
        if (i + 1 != plan.size()) calls.release(gradients_[i]);
      }
    }
  }

  /// The last forward()'s input, or nullptr before the first.
  const T* input() const noexcept { return input_; }
  /// The last layer's output.
  const T& logits() const { return activations_.back(); }

 private:
  template <class Calls>
  void backward_layer(const GraphPlan& plan, std::size_t i, const T& grad_out, Calls& calls) {
    const std::vector<std::size_t>& inputs = plan.inputs[i];
    // Reused from layer to layer and step to step: no allocation on the step's path.
    ins_.clear();
    grad_ins_.clear();
    if (scratch_.size() < inputs.size()) scratch_.resize(inputs.size());
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::size_t in = inputs[k] == kModelInput ? kModelInput : plan.holder[inputs[k]];
      ins_.push_back(in == kModelInput ? input_ : &activations_[in]);
      if (in == kModelInput || !plan.needs_grad[in]) {
        grad_ins_.push_back(nullptr);
      } else if (!written_[in]) {
        grad_ins_.push_back(&gradients_[in]);
        written_[in] = true;
      } else {
        grad_ins_.push_back(&scratch_[k]);
      }
    }
    calls.backward(i, std::span<const T* const>(ins_), grad_out, std::span<T* const>(grad_ins_));
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (grad_ins_[k] == &scratch_[k])
        calls.accumulate(gradients_[plan.holder[inputs[k]]], scratch_[k]);
    }
  }

  std::vector<T> activations_;  // activations_[i] = output of layer i
  std::vector<T> gradients_;    // gradients_[i] = dL/d(output of layer i)
  std::vector<T> scratch_;      // a merge's input gradients, added to shared ones
  std::vector<bool> written_;   // backward: gradients_[i] holds a first contribution
  std::vector<const T*> ins_;   // one layer call's inputs
  std::vector<T*> grad_ins_;    // one backward call's input gradients
  const T* input_ = nullptr;
};

}  // namespace conflux::model
