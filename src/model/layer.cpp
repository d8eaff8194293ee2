#include "conflux/model/layer.hpp"

#include <fmt/format.h>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux::model {

SampleShape Layer::output_shape_of(std::span<const SampleShape> inputs) const {
  CONFLUX_REQUIRE(inputs.size() == 1, "takes one input, got {}", inputs.size());
  return output_shape(inputs[0]);
}

void Layer::forward_pass(const Pass& /*pass*/, Inputs in, Tensor& out) {
  CONFLUX_CHECK(in.size() == 1, "{}: forward with {} inputs", type(), in.size());
  forward(*in[0], out);
}

void Layer::backward_pass(const Pass& /*pass*/, Inputs in, const Tensor& grad_out,
                          InputGrads grad_in) {
  CONFLUX_CHECK(in.size() == 1 && grad_in.size() == 1, "{}: backward with {} inputs", type(),
                in.size());
  // A layer told that its input gradient is not needed leaves it empty, so scratch will do.
  Tensor unused;
  backward(*in[0], grad_out, grad_in[0] != nullptr ? *grad_in[0] : unused);
}

std::unique_ptr<Layer> make_layer(const LayerSpec& spec, const LayerOptions& options) {
  return layer_type(spec.type).make(spec, options);
}

}  // namespace conflux::model
