#include "conflux/model/onnx_export.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstddef>
#include <span>
#include <string_view>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/model/graph.hpp"
#include "conflux/model/pooling.hpp"
#include "onnx/onnx.pb.h"

namespace conflux::model {

namespace {

// ONNX stores raw tensor data little-endian; a big-endian build would have to swap bytes.
static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

// ONNX IR version 7 is the one that came with opset 13.
constexpr std::int64_t kIrVersion = 7;

void set_float_tensor_type(onnx::ValueInfoProto& value, const std::string& name,
                           const SampleShape& per_sample) {
  value.set_name(name);
  onnx::TypeProto_Tensor& tensor = *value.mutable_type()->mutable_tensor_type();
  tensor.set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto& shape = *tensor.mutable_shape();
  shape.add_dim()->set_dim_param("batch");  // any batch size
  for (const int d : per_sample) shape.add_dim()->set_dim_value(d);
}

void fill_tensor(onnx::TensorProto& out, const std::string& name, const std::vector<int>& shape,
                 std::span<const float> values) {
  out.set_name(name);
  out.set_data_type(onnx::TensorProto::FLOAT);
  for (const int d : shape) out.add_dims(d);
  out.set_raw_data(values.data(), values.size_bytes());
}

void add_ints(onnx::NodeProto& node, const char* name, std::initializer_list<std::int64_t> ints) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (const std::int64_t v : ints) a.add_ints(v);
}

void add_float(onnx::NodeProto& node, const char* name, float value) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
}

void add_int(onnx::NodeProto& node, const char* name, std::int64_t value) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
}

// The state tensors of layer `index` ("layer3.conv2d.weight", "...bias"; batch norm's
// running statistics after them), in order.
std::vector<const ParamInfo*> layer_tensors(const Model& model, std::size_t index) {
  const std::string prefix = fmt::format("layer{}.", index);
  std::vector<const ParamInfo*> out;
  for (const ParamInfo& info : model.state_infos()) {
    if (std::string_view(info.name).starts_with(prefix)) out.push_back(&info);
  }
  return out;
}

// One layer as one ONNX node from `input` to `output`; its weights become initializers named
// as in model.h5, so the two files read alike.
void add_layer(onnx::GraphProto& graph, const Model& model, std::size_t index,
               const std::vector<std::string>& inputs, const std::string& output) {
  const LayerSpec& spec = model.specs()[index];
  onnx::NodeProto& node = *graph.add_node();
  node.set_name(fmt::format("layer{}.{}", index, spec.type));
  for (const std::string& input : inputs) node.add_input(input);
  // Parameters then buffers, named as in model.h5: batch norm's scale, bias, mean and
  // variance are BatchNormalization's inputs in that order.
  const std::vector<const ParamInfo*> params = layer_tensors(model, index);
  for (const ParamInfo* info : params) {
    fill_tensor(*graph.add_initializer(), info->name, info->shape,
                model.state().subspan(info->offset, info->size));
    node.add_input(info->name);
  }
  node.add_output(output);
  const std::size_t expected = spec.type == "linear" || spec.type == "conv2d" ? 2u
                               : spec.type == "batchnorm"                     ? 4u
                                                                              : 0u;
  CONFLUX_CHECK(params.size() == expected, "layer {} ({}) has {} state tensors", index, spec.type,
                params.size());
  if (spec.type == "linear") {
    node.set_op_type("Gemm");  // y = x W^T + b, W stored {out, in} as in PyTorch
    add_int(node, "transB", 1);
  } else if (spec.type == "conv2d") {
    node.set_op_type("Conv");
    add_ints(node, "kernel_shape", {spec.kernel, spec.kernel});
    add_ints(node, "strides", {spec.stride, spec.stride});
    add_ints(node, "pads", {spec.padding, spec.padding, spec.padding, spec.padding});
  } else if (spec.type == "maxpool") {
    node.set_op_type("MaxPool");  // floor, padded positions never win: ONNX's default too
    const int stride = pool_stride(spec.kernel, spec.stride);
    add_ints(node, "kernel_shape", {spec.kernel, spec.kernel});
    add_ints(node, "strides", {stride, stride});
    if (spec.padding > 0) {
      add_ints(node, "pads", {spec.padding, spec.padding, spec.padding, spec.padding});
    }
  } else if (spec.type == "avgpool") {
    node.set_op_type("AveragePool");  // no padding, floor, like conflux's avgpool
    const int stride = pool_stride(spec.kernel, spec.stride);
    add_ints(node, "kernel_shape", {spec.kernel, spec.kernel});
    add_ints(node, "strides", {stride, stride});
  } else if (spec.type == "globalavgpool") {
    // ONNX keeps [N, C, 1, 1]; conflux's layer yields [N, C]: a Flatten follows.
    node.set_op_type("GlobalAveragePool");
    node.set_output(0, output + ".pooled");
    onnx::NodeProto& flatten = *graph.add_node();
    flatten.set_name(node.name() + ".flatten");
    flatten.set_op_type("Flatten");
    flatten.add_input(output + ".pooled");
    flatten.add_output(output);
    add_int(flatten, "axis", 1);
  } else if (spec.type == "batchnorm") {
    node.set_op_type("BatchNormalization");  // inference form: the running statistics
    add_float(node, "epsilon", static_cast<float>(spec.eps));
    add_float(node, "momentum", static_cast<float>(1.0 - spec.momentum));  // ONNX's convention
  } else if (spec.type == "dropout") {
    node.set_op_type("Identity");  // dropout is the identity in inference
  } else if (spec.type == "add") {
    node.set_op_type("Sum");  // element-wise, any number of inputs, in order
  } else if (spec.type == "concat") {
    node.set_op_type("Concat");
    add_int(node, "axis", 1);  // the channels (or features)
  } else if (spec.type == "relu") {
    node.set_op_type("Relu");
  } else if (spec.type == "flatten") {
    node.set_op_type("Flatten");  // [N, C, H, W] -> [N, C*H*W] in C order, like conflux
    add_int(node, "axis", 1);
  } else {
    CONFLUX_INPUT_ERROR("layer {} ({}): no ONNX operator for this layer type", index, spec.type);
  }
}

}  // namespace

void write_onnx_model(const std::filesystem::path& path, const Model& model,
                      const OnnxExportOptions& options) {
  onnx::ModelProto proto;
  proto.set_ir_version(kIrVersion);
  proto.set_producer_name("conflux");
  proto.set_producer_version(options.producer_version);
  onnx::OperatorSetIdProto& opset = *proto.add_opset_import();
  opset.set_domain("");  // the default ONNX domain
  opset.set_version(kOnnxOpset);
  for (const auto& [key, value] : options.metadata) {
    onnx::StringStringEntryProto& entry = *proto.add_metadata_props();
    entry.set_key(key);
    entry.set_value(value);
  }
  onnx::GraphProto& graph = *proto.mutable_graph();
  graph.set_name(options.graph_name.empty() ? "conflux" : options.graph_name);
  set_float_tensor_type(*graph.add_input(), "input", model.input_shape());
  // Nodes in execution order (ONNX wants a topologically sorted graph); layer i's output is
  // "layer{i}", the last one's "logits".
  const GraphWiring wiring = wire_graph(model.specs());
  const auto name_of = [&](std::size_t i) {
    if (i == kModelInput) return std::string("input");
    return i == wiring.output ? std::string("logits") : fmt::format("layer{}", i);
  };
  for (const std::size_t i : wiring.order) {
    std::vector<std::string> inputs;
    for (const std::size_t in : wiring.inputs[i]) inputs.push_back(name_of(in));
    add_layer(graph, model, i, inputs, name_of(i));
  }
  set_float_tensor_type(*graph.add_output(), "logits", model.output_shape());
  std::string bytes;
  CONFLUX_CHECK(proto.SerializeToString(&bytes), "cannot serialise the ONNX model for {}",
                path.string());
  publish_bytes(path, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

void write_onnx_tensor(const std::filesystem::path& path, const std::string& name,
                       const Tensor& tensor) {
  onnx::TensorProto proto;
  fill_tensor(proto, name, tensor.shape, tensor.data);
  std::string bytes;
  CONFLUX_CHECK(proto.SerializeToString(&bytes), "cannot serialise tensor {} for {}", name,
                path.string());
  publish_bytes(path, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

}  // namespace conflux::model
