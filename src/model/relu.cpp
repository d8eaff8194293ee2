#include "conflux/model/relu.hpp"

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux::model {

void relu_in_place(float* y, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) y[i] = relu_value(y[i]);
}

void relu_gate(const float* x, const float* dy, std::size_t count, float* dx) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    // Load dy unconditionally: a load guarded by the sign test could not be vectorised, and
    // the resulting data-dependent branch mispredicts about half the time (10x slower).
    const float g = dy[i];
    dx[i] = relu_gated(x[i], g);
  }
}

const float* FusedRelu::output_for(const Tensor& grad_out, std::string_view layer) const {
  CONFLUX_CHECK(output_ != nullptr && output_->shape == grad_out.shape,
                "{}: fused ReLU without the output of the last forward", layer);
  return output_->data.data();
}

void Relu::forward(const Tensor& in, Tensor& out) {
  out.resize(in.shape);
  const float* x = in.data.data();
  float* y = out.data.data();
  const std::size_t count = in.size();
  for (std::size_t i = 0; i < count; ++i) y[i] = relu_value(x[i]);
}

void Relu::backward(const Tensor& in, const Tensor& grad_out, Tensor& grad_in) {
  CONFLUX_CHECK(grad_out.size() == in.size(), "relu: backward gradient of {} values for {} inputs",
                grad_out.size(), in.size());
  grad_in.resize(in.shape);
  relu_gate(in.data.data(), grad_out.data.data(), in.size(), grad_in.data.data());
}

const LayerType& relu_layer_type() {
  static const LayerType type{
      .config = {.type = "relu", .keys = {}, .doc = "Rectified linear unit."},
      .make = [](const LayerSpec&, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<Relu>();
      },
      .onnx = [](const LayerSpec&) { return OnnxOp{.op_type = "Relu", .attributes = {}}; }};
  return type;
}

}  // namespace conflux::model
