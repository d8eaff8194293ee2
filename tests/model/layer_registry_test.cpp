// The layer registry (model/layer_type.hpp): every type is complete and unique, the schema's
// layer keys are the registry's, each factory builds its own type, an unknown name lists the
// known ones, and each type's ONNX operator carries its keys.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>
#include <vector>

#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux::model {
namespace {

// A spec of `type` with every key at its default, and "out" (required) at 4.
LayerSpec default_spec(const LayerType& type) {
  LayerSpec spec;
  spec.type = type.name();
  for (const LayerKey& key : type.config.keys) {
    key.set(spec, key.default_toml.empty() ? 4.0 : std::stod(key.default_toml));
  }
  if (type.config.complete != nullptr) type.config.complete(spec);
  return spec;
}

const OnnxAttribute* attribute(const OnnxOp& op, const std::string& name) {
  for (const OnnxAttribute& a : op.attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST(LayerRegistry, EveryTypeIsCompleteAndUnique) {
  std::set<std::string> names;
  ASSERT_EQ(layer_types().size(), 11u);
  for (const LayerType* type : layer_types()) {
    EXPECT_TRUE(names.insert(type->name()).second) << type->name() << " registered twice";
    EXPECT_FALSE(type->config.doc.empty()) << type->name();
    EXPECT_NE(type->make, nullptr) << type->name();
    EXPECT_NE(type->onnx, nullptr) << type->name();
    EXPECT_EQ(&layer_type(type->name()), type);
  }
}

TEST(LayerRegistry, TheSchemasLayerKeysAreTheRegistrys) {
  const auto& keys = layer_keys();
  ASSERT_EQ(keys.size(), layer_types().size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const LayerType& type = *layer_types()[i];
    EXPECT_EQ(keys[i].type, type.name());
    EXPECT_EQ(keys[i].doc, type.config.doc);
    ASSERT_EQ(keys[i].keys.size(), type.config.keys.size()) << type.name();
    for (std::size_t k = 0; k < keys[i].keys.size(); ++k) {
      EXPECT_EQ(keys[i].keys[k].path, type.config.keys[k].path);
    }
  }
}

TEST(LayerRegistry, EachFactoryBuildsItsOwnType) {
  for (const LayerType* type : layer_types()) {
    const std::unique_ptr<Layer> layer = make_layer(default_spec(*type));
    ASSERT_NE(layer, nullptr) << type->name();
    EXPECT_EQ(layer->type(), type->name());
    EXPECT_EQ(layer->arity() == 0, type->name() == "add" || type->name() == "concat")
        << type->name();
  }
}

TEST(LayerRegistry, AnUnknownTypeNamesTheKnownOnes) {
  try {
    layer_type("dense");
    FAIL() << "no error for an unknown type";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown layer type 'dense'"), std::string::npos) << message;
    for (const LayerType* type : layer_types()) {
      EXPECT_NE(message.find(type->name()), std::string::npos) << message;
    }
  }
}

TEST(LayerRegistry, OnnxOperatorsCarryTheKeys) {
  LayerSpec conv{.type = "conv2d", .out = 8, .kernel = 3, .stride = 2, .padding = 1};
  const OnnxOp op = layer_type("conv2d").onnx(conv);
  EXPECT_EQ(op.op_type, "Conv");
  const auto ints = [&](const OnnxOp& o, const std::string& name) {
    const OnnxAttribute* a = attribute(o, name);
    return a != nullptr ? std::get<std::vector<std::int64_t>>(a->value)
                        : std::vector<std::int64_t>{};
  };
  EXPECT_EQ(ints(op, "kernel_shape"), (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(ints(op, "strides"), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ints(op, "pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));

  // A pool's stride 0 is its window once the reader completes the spec.
  LayerSpec pool = default_spec(layer_type("maxpool"));
  EXPECT_EQ(pool.stride, pool.kernel);
  const OnnxOp max = layer_type("maxpool").onnx(pool);
  EXPECT_EQ(ints(max, "strides"), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(attribute(max, "pads"), nullptr) << "unpadded pools write no pads";

  const OnnxOp bn = layer_type("batchnorm").onnx({.type = "batchnorm", .momentum = 0.25});
  ASSERT_NE(attribute(bn, "momentum"), nullptr);
  EXPECT_FLOAT_EQ(std::get<float>(attribute(bn, "momentum")->value), 0.75f);  // ONNX's sense
  EXPECT_TRUE(layer_type("globalavgpool").onnx({}).flatten_output);
  EXPECT_FALSE(layer_type("relu").onnx({}).flatten_output);
}

}  // namespace
}  // namespace conflux::model
