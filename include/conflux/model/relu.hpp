#pragma once
/// @file relu.hpp
/// Rectified linear unit, element-wise.

#include <cstddef>
#include <string>
#include <string_view>

#include "conflux/core/host_device.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::model {

/// The ReLU of one value: x > 0 ? x : 0 (so -0 and NaN give +0); every device's ReLU.
CONFLUX_HD inline float relu_value(float x) noexcept {
  return x > 0.0f ? x : 0.0f;
}
/// The ReLU's backward map of one value: dy where the gate (the ReLU's input or output) is
/// positive, else 0; every device's.
CONFLUX_HD inline float relu_gated(float gate, float dy) noexcept {
  return gate > 0.0f ? dy : 0.0f;
}
/// y[i] = relu_value(y[i]), in place; the one ReLU forward map (Relu and fused layers).
void relu_in_place(float* y, std::size_t count) noexcept;
/// dx[i] = x[i] > 0 ? dy[i] : 0, the one ReLU backward map; `x` may be the ReLU's input or its
/// output (positive at the same places). dx may be dy.
void relu_gate(const float* x, const float* dy, std::size_t count, float* dx) noexcept;

/// A layer's fused ReLU (Layer::fuse_relu): whether it is on, and the output of the layer's
/// last forward, by which its backward gates the gradient.
class FusedRelu {
 public:
  /// Turns it on; returns true, as Layer::fuse_relu does for a layer that can.
  bool enable() noexcept { return on_ = true; }
  bool on() const noexcept { return on_; }
  /// Called by each forward: the output (it must stay alive until the backward).
  void set_output(const Tensor& out) noexcept { output_ = &out; }
  /// The last forward's output values, to gate `grad_out` by (relu_gate); RuntimeError naming
  /// `layer` when no forward's output of grad_out's shape was set.
  const float* output_for(const Tensor& grad_out, std::string_view layer) const;

 private:
  bool on_ = false;
  const Tensor* output_ = nullptr;
};

/// y = max(x, 0); the gradient is taken as 0 at x <= 0 (as in PyTorch). Any input shape.
class Relu final : public Layer {
 public:
  std::string type() const override { return "relu"; }
  SampleShape output_shape(const SampleShape& input) const override { return input; }
  void forward(const Tensor& in, Tensor& out) override;
  void backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) override;
};

}  // namespace conflux::model
