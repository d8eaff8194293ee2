// The ONNX export read back through ONNX's own schema: nodes, attributes, weights, shapes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "conflux/model/model.hpp"
#include "conflux/model/onnx_export.hpp"
#include "onnx/onnx.pb.h"

namespace conflux::model {
namespace {

namespace fs = std::filesystem;

const std::vector<LayerSpec> kSmall{
    {.type = "conv2d", .out = 4, .kernel = 3, .stride = 2, .padding = 1},
    {.type = "relu"},
    {.type = "maxpool", .kernel = 2, .stride = 0},
    {.type = "flatten"},
    {.type = "linear", .out = 5},
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

fs::path temp_path(const char* name) {
  return fs::temp_directory_path() /
         (std::string("conflux_onnx_") + std::to_string(::getpid()) + "_" + name);
}

std::vector<std::int64_t> ints_of(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

TEST(OnnxExport, OneNodePerLayerWithTheWeightsAsInitializers) {
  const Model model(kSmall, {3, 8, 8}, 5, 42);
  const fs::path path = temp_path("model.onnx");
  write_onnx_model(path, model,
                   {.producer_version = "9.9", .graph_name = "small", .metadata = {{"k", "v"}}});
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_file(path)));
  fs::remove(path);
  EXPECT_EQ(proto.producer_name(), "conflux");
  EXPECT_EQ(proto.opset_import(0).version(), kOnnxOpset);
  ASSERT_EQ(proto.metadata_props_size(), 1);
  const onnx::GraphProto& g = proto.graph();
  ASSERT_EQ(g.node_size(), 5);
  EXPECT_EQ(g.node(0).op_type(), "Conv");
  EXPECT_EQ(ints_of(g.node(0), "strides"), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ints_of(g.node(0), "pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(g.node(2).op_type(), "MaxPool");
  EXPECT_EQ(ints_of(g.node(2), "strides"), (std::vector<std::int64_t>{2, 2}));  // 0: the kernel
  EXPECT_TRUE(ints_of(g.node(2), "pads").empty());
  EXPECT_EQ(g.node(3).op_type(), "Flatten");
  EXPECT_EQ(g.node(4).op_type(), "Gemm");
  EXPECT_EQ(g.node(4).output(0), "logits");
  // Every parameter tensor, byte for byte, under its model.h5 name.
  ASSERT_EQ(g.initializer_size(), static_cast<int>(model.param_infos().size()));
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto& t = g.initializer(i);
    const ParamInfo& info = model.param_infos()[i];
    EXPECT_EQ(t.name(), info.name);
    EXPECT_EQ(std::vector<std::int64_t>(t.dims().begin(), t.dims().end()),
              std::vector<std::int64_t>(info.shape.begin(), info.shape.end()));
    ASSERT_EQ(t.raw_data().size(), info.size * sizeof(float));
    EXPECT_EQ(
        std::memcmp(t.raw_data().data(), model.params().data() + info.offset, t.raw_data().size()),
        0);
  }
  const auto& in = g.input(0).type().tensor_type().shape();
  EXPECT_EQ(in.dim(0).dim_param(), "batch");
  EXPECT_EQ(in.dim(1).dim_value(), 3);
  EXPECT_EQ(g.output(0).type().tensor_type().shape().dim(1).dim_value(), 5);
}

// ONNX's MaxPool pads with -infinity like conflux's (its default), so padding maps to `pads`.
TEST(OnnxExport, PaddedMaxPoolGetsPads) {
  const Model model({{.type = "maxpool", .kernel = 3, .stride = 2, .padding = 1},
                     {.type = "flatten"},
                     {.type = "linear", .out = 5}},
                    {3, 8, 8}, 5, 42);
  const fs::path path = temp_path("padded.onnx");
  write_onnx_model(path, model,
                   {.producer_version = "9.9", .graph_name = "padded", .metadata = {}});
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_file(path)));
  fs::remove(path);
  const onnx::NodeProto& pool = proto.graph().node(0);
  EXPECT_EQ(pool.op_type(), "MaxPool");
  EXPECT_EQ(ints_of(pool, "kernel_shape"), (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(ints_of(pool, "pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));
}

TEST(OnnxExport, TensorFileHoldsShapeAndValues) {
  const Tensor tensor{.shape = {2, 3}, .data = {1, 2, 3, 4, 5, -6.5f}};
  const fs::path path = temp_path("tensor.pb");
  write_onnx_tensor(path, "input", tensor);
  onnx::TensorProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_file(path)));
  fs::remove(path);
  EXPECT_EQ(proto.name(), "input");
  EXPECT_EQ(proto.data_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(proto.dims_size(), 2);
  std::vector<float> values(6);
  ASSERT_EQ(proto.raw_data().size(), sizeof(float) * values.size());
  std::memcpy(values.data(), proto.raw_data().data(), proto.raw_data().size());
  EXPECT_EQ(values, tensor.data);
}

}  // namespace
}  // namespace conflux::model
