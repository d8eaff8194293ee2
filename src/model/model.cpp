#include "conflux/model/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/core/error.hpp"

namespace conflux::model {
namespace {

// Key word of the parameter-initialisation generator: ASCII "model".
constexpr std::uint64_t kInitStream = 0x6d6f64656c;

// Index of the first layer with parameters (layers.size() if none). Gradients with respect to
// its input, and anything below it, are never read: backward() stops there.
std::size_t first_trainable(const std::vector<std::unique_ptr<Layer>>& layers,
                            const std::vector<SampleShape>& shapes) {
  std::size_t i = 0;
  while (i < layers.size() && layers[i]->param_layout(shapes[i]).empty()) ++i;
  return i;
}

// The count of a layer's parameters for inputs of `input`.
std::size_t param_count(const Layer& layer, const SampleShape& input) {
  std::size_t count = 0;
  for (const ParamInfo& info : layer.param_layout(input)) count += Tensor::count_of(info.shape);
  return count;
}

// The layers of `specs` with their shapes (shapes[i] is layer i's input, back() the output),
// made without allocating any parameter or activation. The one walk of the specs, shared by
// the constructor and footprint(); InputError naming the layer.
struct LayerStack {
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<SampleShape> shapes;
};

LayerStack stack_layers(const std::vector<LayerSpec>& specs, const SampleShape& input_shape,
                        int num_classes) {
  CONFLUX_REQUIRE(!specs.empty(), "the model has no layers");
  CONFLUX_REQUIRE(num_classes > 0, "the number of classes must be > 0, got {}", num_classes);
  CONFLUX_REQUIRE(
      !input_shape.empty() && std::ranges::all_of(input_shape, [](int d) { return d > 0; }),
      "invalid model input shape [{}]", fmt::join(input_shape, ","));
  LayerStack stack;
  stack.shapes.push_back(input_shape);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::unique_ptr<Layer> layer;
    try {
      layer = make_layer(specs[i]);
    } catch (const InputError& e) {
      throw InputError(fmt::format("layer {}: {}", i, e.what()), e.file(), e.line());
    }
    try {
      stack.shapes.push_back(layer->output_shape(stack.shapes[i]));
    } catch (const InputError& e) {
      throw InputError(fmt::format("layer {} ({}) {}", i, layer->type(), e.what()), e.file(),
                       e.line());
    }
    stack.layers.push_back(std::move(layer));
  }
  CONFLUX_REQUIRE(stack.shapes.back() == SampleShape{num_classes},
                  "model output is [{}] but the dataset has {} classes",
                  fmt::join(stack.shapes.back(), ","), num_classes);
  return stack;
}

}  // namespace

double LayerFootprint::bytes(std::size_t batch) const {
  return static_cast<double>(sizeof(float)) *
         ((2.0 + static_cast<double>(state_buffers)) * static_cast<double>(params) +
          static_cast<double>(activation_floats) * static_cast<double>(batch));
}

std::size_t ModelFootprint::params() const {
  std::size_t total = 0;
  for (const LayerFootprint& layer : layers) total += layer.params;
  return total;
}

double ModelFootprint::bytes(std::size_t batch) const {
  double total = 0;
  for (const LayerFootprint& layer : layers) total += layer.bytes(batch);
  return total;
}

std::size_t ModelFootprint::largest(std::size_t batch) const {
  std::size_t largest = 0;
  for (std::size_t i = 1; i < layers.size(); ++i)
    if (layers[i].bytes(batch) > layers[largest].bytes(batch)) largest = i;
  return largest;
}

ModelFootprint Model::footprint(const std::vector<LayerSpec>& specs, const SampleShape& input_shape,
                                int num_classes) {
  const LayerStack stack = stack_layers(specs, input_shape, num_classes);
  const std::size_t first = first_trainable(stack.layers, stack.shapes);
  ModelFootprint footprint;
  for (std::size_t i = 0; i < stack.layers.size(); ++i) {
    const std::size_t output = Tensor::count_of(stack.shapes[i + 1]);
    // forward() keeps every layer's output; backward() keeps the gradient of every layer's
    // input above the first trainable layer, which has the size of the output below it.
    const bool has_gradient = i >= first && i + 1 < stack.layers.size();
    footprint.layers.push_back({.type = stack.layers[i]->type(),
                                .params = param_count(*stack.layers[i], stack.shapes[i]),
                                .activation_floats = has_gradient ? 2 * output : output});
  }
  return footprint;
}

Model::Model(const std::vector<LayerSpec>& specs, const SampleShape& input_shape, int num_classes,
             std::uint64_t seed)
    : input_shape_(input_shape) {
  LayerStack stack = stack_layers(specs, input_shape, num_classes);
  layers_ = std::move(stack.layers);
  shapes_ = std::move(stack.shapes);
  bind_and_init(lay_out_params(), seed);
  // Nothing reads the gradient with respect to the input of the first layer with parameters
  // (e.g. the linear layer after a leading flatten), and it costs as much as that layer's
  // weight gradient, a quarter of an MLP step; skip it.
  if (const std::size_t first = first_trainable(layers_, shapes_); first < layers_.size()) {
    layers_[first]->set_input_grad_needed(false);
  }
  activations_.resize(layers_.size());
  gradients_.resize(layers_.size());
}

// Lays out all parameter tensors in one buffer, layer by layer; returns where each layer's
// parameters begin (and, last, the total).
std::vector<std::size_t> Model::lay_out_params() {
  std::vector<std::size_t> layer_begin;
  std::size_t total = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layer_begin.push_back(total);
    for (ParamInfo info : layers_[i]->param_layout(shapes_[i])) {
      info.name = fmt::format("layer{}.{}.{}", i, layers_[i]->type(), info.name);
      info.size = Tensor::count_of(info.shape);
      info.offset = total;
      total += info.size;
      infos_.push_back(std::move(info));
    }
  }
  layer_begin.push_back(total);
  params_.assign(total, 0.0f);
  grads_.assign(total, 0.0f);
  return layer_begin;
}

// Gives each layer its spans of the buffers and initialises it, in layer order from one stream.
void Model::bind_and_init(const std::vector<std::size_t>& layer_begin, std::uint64_t seed) {
  Rng rng{seed, kInitStream};
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const std::size_t size = layer_begin[i + 1] - layer_begin[i];
    layers_[i]->bind(std::span(params_).subspan(layer_begin[i], size),
                     std::span(grads_).subspan(layer_begin[i], size));
    layers_[i]->init_params(rng);
  }
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const Tensor& Model::forward(const Tensor& input) {
  CONFLUX_REQUIRE(
      input.shape.size() == input_shape_.size() + 1 &&
          std::equal(input_shape_.begin(), input_shape_.end(), input.shape.begin() + 1) &&
          input.size() == Tensor::count_of(input.shape),
      "model expects input [N,{}] but gets [{}]", fmt::join(input_shape_, ","),
      fmt::join(input.shape, ","));
  last_input_ = &input;
  const Tensor* x = &input;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(*x, activations_[i]);
    x = &activations_[i];
  }
  return activations_.back();
}

void Model::backward(const Tensor& grad_logits) {
  CONFLUX_CHECK(last_input_ != nullptr, "Model::backward called before forward");
  CONFLUX_CHECK(grad_logits.shape == activations_.back().shape,
                "Model::backward: gradient [{}] does not match the logits [{}]",
                fmt::join(grad_logits.shape, ","), fmt::join(activations_.back().shape, ","));
  // Parameter-free layers below the first trainable one need no backward pass (their input
  // gradients would be thrown away).
  const std::size_t first = first_trainable(layers_, shapes_);
  for (std::size_t i = layers_.size(); i-- > first;) {
    const Tensor& in = i == 0 ? *last_input_ : activations_[i - 1];
    const Tensor& grad_out = i + 1 == layers_.size() ? grad_logits : gradients_[i + 1];
    layers_[i]->backward(in, grad_out, gradients_[i]);
  }
}

std::vector<std::string> Model::summary() const {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    lines.push_back(fmt::format("{} : [{}] ({} params)", layers_[i]->describe(),
                                fmt::join(shapes_[i + 1], ","),
                                param_count(*layers_[i], shapes_[i])));
  }
  return lines;
}

}  // namespace conflux::model
