#include "conflux/model/onnx_export.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstddef>
#include <span>
#include <string_view>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/model/graph.hpp"
#include "conflux/model/layer_type.hpp"
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

void add_attribute(onnx::NodeProto& node, const OnnxAttribute& attribute) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(attribute.name);
  if (const auto* i = std::get_if<std::int64_t>(&attribute.value)) {
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(*i);
  } else if (const auto* f = std::get_if<float>(&attribute.value)) {
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(*f);
  } else {
    a.set_type(onnx::AttributeProto::INTS);
    for (const std::int64_t v : std::get<std::vector<std::int64_t>>(attribute.value)) {
      a.add_ints(v);
    }
  }
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
  const OnnxOp op = layer_type(spec.type).onnx(spec);
  node.set_op_type(op.op_type);
  for (const OnnxAttribute& attribute : op.attributes) add_attribute(node, attribute);
  if (op.flatten_output) {
    node.set_output(0, output + ".pooled");
    onnx::NodeProto& flatten = *graph.add_node();
    flatten.set_name(node.name() + ".flatten");
    flatten.set_op_type("Flatten");
    flatten.add_input(output + ".pooled");
    flatten.add_output(output);
    add_attribute(flatten, {"axis", std::int64_t{1}});
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
