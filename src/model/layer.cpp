#include "conflux/model/layer.hpp"

#include <fmt/format.h>

#include <vector>

#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"
#include "conflux/model/avgpool2d.hpp"
#include "conflux/model/batchnorm.hpp"
#include "conflux/model/conv2d.hpp"
#include "conflux/model/dropout.hpp"
#include "conflux/model/flatten.hpp"
#include "conflux/model/linear.hpp"
#include "conflux/model/maxpool2d.hpp"
#include "conflux/model/merge.hpp"
#include "conflux/model/relu.hpp"

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
  // Only the fields a type uses are checked: LayerSpec defaults (kernel = 3, stride = 1) are
  // meaningless for linear, relu and flatten and must not trip them.
  if (spec.type == "linear") return std::make_unique<Linear>(spec.out);
  if (spec.type == "conv2d") {
    return std::make_unique<Conv2d>(spec.out, spec.kernel, spec.stride, spec.padding, options);
  }
  if (spec.type == "maxpool") {
    return std::make_unique<MaxPool2d>(spec.kernel, spec.stride, spec.padding);
  }
  if (spec.type == "avgpool") {
    CONFLUX_REQUIRE(spec.padding == 0, "avgpool: padding is not supported, got {}", spec.padding);
    return std::make_unique<AvgPool2d>(spec.kernel, spec.stride);
  }
  if (spec.type == "globalavgpool") return std::make_unique<GlobalAvgPool>();
  if (spec.type == "add") return std::make_unique<Add>();
  if (spec.type == "concat") return std::make_unique<Concat>();
  if (spec.type == "relu") return std::make_unique<Relu>();
  if (spec.type == "flatten") return std::make_unique<Flatten>();
  if (spec.type == "batchnorm") return std::make_unique<BatchNorm>(spec.momentum, spec.eps);
  if (spec.type == "dropout") return std::make_unique<Dropout>(spec.rate);
  std::vector<std::string> known;
  for (const LayerKeySpec& k : layer_keys()) known.push_back(k.type);
  CONFLUX_INPUT_ERROR("unknown layer type '{}' (known types: {})", spec.type,
                      fmt::join(known, ", "));
}

}  // namespace conflux::model
