#include "conflux/model/merge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {
namespace {

std::string shapes_text(std::span<const SampleShape> shapes) {
  std::vector<std::string> parts;
  for (const SampleShape& s : shapes) parts.push_back(fmt::format("[{}]", fmt::join(s, ",")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

SampleShape MergeLayer::output_shape(const SampleShape& /*input*/) const {
  CONFLUX_INPUT_ERROR("takes two or more inputs, got one");
}

void MergeLayer::forward(const Tensor& /*in*/, Tensor& /*out*/) {
  CONFLUX_RUNTIME_ERROR("{}: forward with one input", type());
}

void MergeLayer::backward(const Tensor& /*in*/, const Tensor& /*grad_out*/, Tensor& /*grad_in*/) {
  CONFLUX_RUNTIME_ERROR("{}: backward with one input", type());
}

SampleShape Add::output_shape_of(std::span<const SampleShape> inputs) const {
  CONFLUX_REQUIRE(inputs.size() >= 2, "takes two or more inputs, got {}", inputs.size());
  CONFLUX_REQUIRE(std::ranges::all_of(inputs, [&](const SampleShape& s) { return s == inputs[0]; }),
                  "adds inputs of different shapes: {}", shapes_text(inputs));
  return inputs[0];
}

void Add::forward_pass(const Pass& /*pass*/, Inputs in, Tensor& out) {
  out.resize(in[0]->shape);
  const std::size_t count = out.size();
  float* y = out.data.data();
  std::memcpy(y, in[0]->data.data(), count * sizeof(float));
  for (std::size_t k = 1; k < in.size(); ++k) {
    CONFLUX_CHECK(in[k]->size() == count, "add: input {} has {} values, input 0 has {}", k,
                  in[k]->size(), count);
    const float* x = in[k]->data.data();
    if (relu_.on() && k + 1 == in.size()) {
      for (std::size_t i = 0; i < count; ++i) y[i] = relu_value(y[i] + x[i]);
    } else {
      for (std::size_t i = 0; i < count; ++i) y[i] += x[i];
    }
  }
  relu_.set_output(out);
}

void Add::backward_pass(const Pass& /*pass*/, Inputs in, const Tensor& grad_out,
                        InputGrads grad_in) {
  const float* gate = relu_.on() ? relu_.output_for(grad_out, "add") : nullptr;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (grad_in[k] == nullptr) continue;
    grad_in[k]->resize(in[k]->shape);
    if (gate != nullptr) {
      relu_gate(gate, grad_out.data.data(), grad_out.size(), grad_in[k]->data.data());
    } else {
      std::memcpy(grad_in[k]->data.data(), grad_out.data.data(), grad_out.size() * sizeof(float));
    }
  }
}

SampleShape Concat::output_shape_of(std::span<const SampleShape> inputs) const {
  CONFLUX_REQUIRE(inputs.size() >= 2, "takes two or more inputs, got {}", inputs.size());
  SampleShape out = inputs[0];
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const SampleShape& s = inputs[k];
    CONFLUX_REQUIRE(s.size() == out.size() && std::equal(s.begin() + 1, s.end(), out.begin() + 1),
                    "concatenates inputs whose shapes differ beyond the channels: {}",
                    shapes_text(inputs));
    out[0] += s[0];
  }
  return out;
}

// Per sample, the inputs' blocks follow each other: channels first is what makes concatenation
// along the channels a copy of contiguous blocks.
void Concat::forward_pass(const Pass& /*pass*/, Inputs in, Tensor& out) {
  const int n = in[0]->batch();
  std::size_t per_sample = 0;
  for (const Tensor* x : in) per_sample += x->per_sample();
  std::vector<int> shape = in[0]->shape;
  shape[1] = 0;
  for (const Tensor* x : in) shape[1] += x->shape[1];
  out.resize(std::move(shape));
  for (int s = 0; s < n; ++s) {
    float* y = out.data.data() + s * per_sample;
    for (const Tensor* x : in) {
      const std::size_t block = x->per_sample();
      std::memcpy(y, x->data.data() + s * block, block * sizeof(float));
      y += block;
    }
  }
}

void Concat::backward_pass(const Pass& /*pass*/, Inputs in, const Tensor& grad_out,
                           InputGrads grad_in) {
  const int n = in[0]->batch();
  const std::size_t per_sample = grad_out.per_sample();
  std::size_t offset = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t block = in[k]->per_sample();
    if (grad_in[k] != nullptr) {
      grad_in[k]->resize(in[k]->shape);
      for (int s = 0; s < n; ++s) {
        std::memcpy(grad_in[k]->data.data() + s * block,
                    grad_out.data.data() + s * per_sample + offset, block * sizeof(float));
      }
    }
    offset += block;
  }
}

const LayerType& add_layer_type() {
  static const LayerType type{
      .config = {.type = "add",
                 .keys = {},
                 .doc = "Element-wise sum of two or more inputs of one shape (skip connections)."},
      .make = [](const LayerSpec&, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<Add>();
      },
      // Element-wise, any number of inputs, in order.
      .onnx = [](const LayerSpec&) { return OnnxOp{.op_type = "Sum", .attributes = {}}; }};
  return type;
}

const LayerType& concat_layer_type() {
  static const LayerType type{
      .config = {.type = "concat",
                 .keys = {},
                 .doc = "Concatenation of two or more inputs along the channels (or features)."},
      .make = [](const LayerSpec&, const LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<Concat>();
      },
      // Axis 1: the channels (or features).
      .onnx =
          [](const LayerSpec&) {
            return OnnxOp{.op_type = "Concat", .attributes = {{"axis", std::int64_t{1}}}};
          }};
  return type;
}

}  // namespace conflux::model
