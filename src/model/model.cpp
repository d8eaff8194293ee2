#include "conflux/model/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "conflux/core/error.hpp"
#include "conflux/model/dropout.hpp"
#include "conflux/model/graph.hpp"
#include "conv_workspace.hpp"

namespace conflux::model {
namespace {

// Key word of the parameter-initialisation generator: ASCII "model".
constexpr std::uint64_t kInitStream = 0x6d6f64656c;

// The count of a layer's parameters (or buffers) for inputs of `input`.
std::size_t float_count(const std::vector<ParamInfo>& layout) {
  std::size_t count = 0;
  for (const ParamInfo& info : layout) count += Tensor::count_of(info.shape);
  return count;
}

std::size_t param_count(const Layer& layer, const SampleShape& input) {
  return float_count(layer.param_layout(input));
}

// The first input's shape: what param_layout and buffer_layout see.
const SampleShape& first_input(const std::vector<SampleShape>& shapes) {
  return shapes.front();
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
  double total = static_cast<double>(scratch_floats) * sizeof(float) * batch;
  for (const LayerFootprint& layer : layers) total += layer.bytes(batch);
  return total;
}

std::size_t ModelFootprint::largest(std::size_t batch) const {
  std::size_t largest = 0;
  for (std::size_t i = 1; i < layers.size(); ++i)
    if (layers[i].bytes(batch) > layers[largest].bytes(batch)) largest = i;
  return largest;
}

// The layers of the specs, wired, with each layer's input and output shapes; nothing
// allocated yet. Shared by the constructor and footprint().
struct Model::Wired {
  std::vector<std::unique_ptr<Layer>> layers;
  GraphWiring wiring;
  std::vector<std::vector<SampleShape>> input_shapes;  // per layer, one per input
  std::vector<SampleShape> output_shapes;
  std::vector<bool> needs_grad;  // per layer: the gradient of its output is needed
};

Model::Wired Model::wire(const std::vector<LayerSpec>& specs, const SampleShape& input_shape,
                         int num_classes, const LayerOptions& options) {
  CONFLUX_REQUIRE(!specs.empty(), "the model has no layers");
  CONFLUX_REQUIRE(num_classes > 0, "the number of classes must be > 0, got {}", num_classes);
  CONFLUX_REQUIRE(
      !input_shape.empty() && std::ranges::all_of(input_shape, [](int d) { return d > 0; }),
      "invalid model input shape [{}]", fmt::join(input_shape, ","));
  Wired w;
  LayerOptions shared = options;
  if (shared.conv == ConvKernels::kOnednn && !shared.workspace)
    shared.workspace = std::make_shared<ConvWorkspace>();  // layers run one at a time
  for (std::size_t i = 0; i < specs.size(); ++i) {
    try {
      w.layers.push_back(make_layer(specs[i], shared));
      // Each dropout layer draws its own masks: its index keys them.
      if (auto* dropout = dynamic_cast<Dropout*>(w.layers.back().get())) dropout->set_salt(i);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", layer_label(specs, i), e.what()), e.file(), e.line());
    }
  }
  w.wiring = wire_graph(specs);
  w.input_shapes.resize(specs.size());
  w.output_shapes.resize(specs.size());
  w.needs_grad.assign(specs.size(), false);
  for (const std::size_t i : w.wiring.order) {
    bool upstream_trainable = false;
    for (const std::size_t in : w.wiring.inputs[i]) {
      w.input_shapes[i].push_back(in == kModelInput ? input_shape : w.output_shapes[in]);
      upstream_trainable = upstream_trainable || (in != kModelInput && w.needs_grad[in]);
    }
    const Layer& layer = *w.layers[i];
    try {
      // Merge layers (arity 0) check their own input count.
      CONFLUX_REQUIRE(layer.arity() == 0 || w.input_shapes[i].size() == layer.arity(),
                      "takes {} input(s), got {}", layer.arity(), w.input_shapes[i].size());
      w.output_shapes[i] = layer.output_shape_of(w.input_shapes[i]);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{} {}", layer_label(specs, i), e.what()), e.file(), e.line());
    }
    w.needs_grad[i] =
        upstream_trainable || !layer.param_layout(first_input(w.input_shapes[i])).empty();
  }
  CONFLUX_REQUIRE(w.output_shapes.back() == SampleShape{num_classes},
                  "model output is [{}] but the dataset has {} classes",
                  fmt::join(w.output_shapes.back(), ","), num_classes);
  return w;
}

namespace {

// Per sample, an upper bound of ConvWorkspace's buffers for the conv2d layers of `layers`:
// the blocked input (or input gradient), two blocked output gradients and the gated one.
// oneDNN's blocked layouts pad channels to a multiple of 16.
std::size_t onednn_scratch_floats(const std::vector<std::unique_ptr<Layer>>& layers,
                                  const std::vector<std::vector<SampleShape>>& inputs,
                                  const std::vector<SampleShape>& outputs) {
  const auto blocked = [](const SampleShape& s) {
    return static_cast<std::size_t>((s[0] + 15) / 16 * 16) * s[1] * s[2];
  };
  std::size_t in = 0, out = 0, gated = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->type() != "conv2d") continue;
    in = std::max(in, blocked(inputs[i].front()));
    out = std::max(out, blocked(outputs[i]));
    gated = std::max(gated, Tensor::count_of(outputs[i]));
  }
  return in + 2 * out + gated;
}

}  // namespace

ModelFootprint Model::footprint(const std::vector<LayerSpec>& specs, const SampleShape& input_shape,
                                int num_classes, const LayerOptions& options) {
  const Wired w = wire(specs, input_shape, num_classes);
  ModelFootprint footprint;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const std::size_t output = Tensor::count_of(w.output_shapes[i]);
    // forward() keeps every layer's output; backward() keeps the gradient of every output
    // above the first trainable layer (not the model's output: the loss owns that one).
    const bool has_gradient = w.needs_grad[i] && i != w.wiring.output;
    const SampleShape& input = first_input(w.input_shapes[i]);
    footprint.layers.push_back({.type = w.layers[i]->type(),
                                .params = param_count(*w.layers[i], input) +
                                          float_count(w.layers[i]->buffer_layout(input)),
                                .activation_floats = has_gradient ? 2 * output : output});
  }
  if (options.conv == ConvKernels::kOnednn)
    footprint.scratch_floats = onednn_scratch_floats(w.layers, w.input_shapes, w.output_shapes);
  return footprint;
}

Model::Model(const std::vector<LayerSpec>& specs, const SampleShape& input_shape, int num_classes,
             std::uint64_t seed, const LayerOptions& options)
    : specs_(specs), input_shape_(input_shape), options_(options) {
  Wired w = wire(specs, input_shape, num_classes, options);
  layers_ = std::move(w.layers);
  plan_.inputs = std::move(w.wiring.inputs);
  plan_.order = std::move(w.wiring.order);
  plan_.needs_grad = std::move(w.needs_grad);
  output_shapes_ = std::move(w.output_shapes);
  input_shapes_ = std::move(w.input_shapes);
  bind_and_init(lay_out_state(), seed);
  tell_unneeded_input_grads();
  fuse_relus(w.wiring.consumers);
  walk_ = GraphWalk<Tensor>(layers_.size());
}

// Nothing reads the gradient with respect to an input without trainable layers above it
// (e.g. the model's input, or the output of a leading flatten), and for the first linear or
// conv layer it costs as much as the weight gradient, a quarter of an MLP step; skip it.
void Model::tell_unneeded_input_grads() {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (layers_[i]->arity() != 1) continue;
    const std::size_t in = plan_.inputs[i][0];
    if (in == kModelInput || !plan_.needs_grad[in]) layers_[i]->set_input_grad_needed(false);
  }
}

// A ReLU whose input feeds nothing else runs inside the layer that makes that input
// (Layer::fuse_relu): its forward map and backward gate then touch each value while the
// producing layer has it in the caches (per sample for conv2d), instead of in two more passes
// over the whole batch. The same operations in the same order: the same bits. The ReLU layer
// stays in the model (names, summary, export) but is not called.
void Model::fuse_relus(const std::vector<std::vector<std::size_t>>& consumers) {
  std::vector<std::size_t>& holder = plan_.holder;
  holder.resize(layers_.size());
  std::iota(holder.begin(), holder.end(), std::size_t{0});
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
    if (layers_[i]->type() != "relu" || plan_.inputs[i].size() != 1) continue;
    const std::size_t in = plan_.inputs[i][0];
    if (in == kModelInput || consumers[in].size() != 1) continue;
    if (layers_[in]->fuse_relu()) holder[i] = in;
  }
}

// Lays out all parameter tensors in one buffer, layer by layer, then all buffers; returns
// where each layer's parameters begin (and, last, where the buffers begin).
std::vector<std::size_t> Model::lay_out_state() {
  std::vector<std::size_t> layer_begin;
  std::size_t total = 0;
  const auto add = [&](std::size_t i, ParamInfo info, std::vector<ParamInfo>* also) {
    info.name = fmt::format("layer{}.{}.{}", i, layers_[i]->type(), info.name);
    info.size = Tensor::count_of(info.shape);
    info.offset = total;
    total += info.size;
    if (also != nullptr) also->push_back(info);
    state_infos_.push_back(std::move(info));
  };
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layer_begin.push_back(total);
    for (ParamInfo info : layers_[i]->param_layout(input_shapes_[i].front()))
      add(i, std::move(info), &param_infos_);
  }
  num_params_ = total;
  layer_begin.push_back(total);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (ParamInfo info : layers_[i]->buffer_layout(input_shapes_[i].front()))
      add(i, std::move(info), nullptr);
  }
  state_.assign(total, 0.0f);
  grads_.assign(num_params_, 0.0f);
  return layer_begin;
}

// Gives each layer its spans of the buffers and initialises it, in layer order from one stream.
void Model::bind_and_init(const std::vector<std::size_t>& layer_begin, std::uint64_t seed) {
  Rng rng{seed, kInitStream};
  std::size_t buffer_begin = num_params_;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const std::size_t size = layer_begin[i + 1] - layer_begin[i];
    layers_[i]->bind(std::span(state_).subspan(layer_begin[i], size),
                     std::span(grads_).subspan(layer_begin[i], size));
    const std::size_t buffers = float_count(layers_[i]->buffer_layout(input_shapes_[i].front()));
    layers_[i]->bind_buffers(std::span(state_).subspan(buffer_begin, buffers));
    slices_.push_back({.param_offset = layer_begin[i],
                       .param_count = size,
                       .buffer_offset = buffer_begin,
                       .buffer_count = buffers});
    buffer_begin += buffers;
    layers_[i]->init_params(rng);
  }
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const Tensor& Model::forward(const Tensor& input) {
  return forward(input, Pass{});
}

// The CPU's layer calls of the walk: the layer objects, watched by the observer when set.
struct Model::LayerCalls {
  Model& model;
  const Pass& pass;
  void forward(std::size_t i, Inputs in, Tensor& out) {
    if (model.observer_ != nullptr) model.observer_->begin(i, false);
    model.layers_[i]->forward_pass(pass, in, out);
    if (model.observer_ != nullptr) model.observer_->end(i, false);
  }
  void backward(std::size_t i, Inputs in, const Tensor& grad_out, InputGrads grad_in) {
    if (model.observer_ != nullptr) model.observer_->begin(i, true);
    model.layers_[i]->backward_pass(pass, in, grad_out, grad_in);
    if (model.observer_ != nullptr) model.observer_->end(i, true);
  }
  static void accumulate(Tensor& sum, const Tensor& add) {
    for (std::size_t e = 0; e < sum.size(); ++e) sum.data[e] += add.data[e];
  }
};

const Tensor& Model::forward(const Tensor& input, const Pass& pass) {
  CONFLUX_REQUIRE(
      input.shape.size() == input_shape_.size() + 1 &&
          std::equal(input_shape_.begin(), input_shape_.end(), input.shape.begin() + 1) &&
          input.size() == Tensor::count_of(input.shape),
      "model expects input [N,{}] but gets [{}]", fmt::join(input_shape_, ","),
      fmt::join(input.shape, ","));
  last_pass_ = pass;
  LayerCalls calls{*this, last_pass_};
  return walk_.forward(plan_, input, calls);
}

void Model::backward(const Tensor& grad_logits) {
  CONFLUX_CHECK(walk_.input() != nullptr, "Model::backward called before forward");
  CONFLUX_CHECK(grad_logits.shape == walk_.logits().shape,
                "Model::backward: gradient [{}] does not match the logits [{}]",
                fmt::join(grad_logits.shape, ","), fmt::join(walk_.logits().shape, ","));
  LayerCalls calls{*this, last_pass_};
  walk_.backward(plan_, grad_logits, calls);
}

std::vector<std::string> Model::summary() const {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::string line = fmt::format("{} : [{}] ({} params)", layers_[i]->describe(),
                                   fmt::join(output_shapes_[i], ","),
                                   param_count(*layers_[i], input_shapes_[i].front()));
    // Graph models also show who feeds whom.
    if (!specs_[i].name.empty()) line += fmt::format(" name={}", specs_[i].name);
    if (!specs_[i].inputs.empty())
      line += fmt::format(" inputs={}", fmt::join(specs_[i].inputs, ","));
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace conflux::model
