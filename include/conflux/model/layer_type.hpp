#pragma once
/// @file layer_type.hpp
/// The registry of layer types: each type is declared once, in its own src/model/<type>.cpp,
/// with its name, its [[model.layers]] keys and their checks, its documentation, how it is
/// built (its kernels) and its ONNX operator. The config schema's layer keys, make_layer,
/// onnx_export and the layer reader all read this registry (docs/design.md, "Adding a layer").

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "conflux/config/schema.hpp"
#include "conflux/model/layer.hpp"

namespace conflux::model {

/// One attribute of an ONNX node.
struct OnnxAttribute {
  std::string name;                                                    ///< e.g. "kernel_shape"
  std::variant<std::int64_t, float, std::vector<std::int64_t>> value;  ///< INT, FLOAT or INTS
};

/// The ONNX operator (opset 13) an exported layer becomes; its inputs are the layer's inputs
/// then its state tensors (parameters, then buffers), named as in model.h5.
struct OnnxOp {
  std::string op_type;                    ///< e.g. "Conv"
  std::vector<OnnxAttribute> attributes;  ///< in the order written
  /// ONNX's operator yields [N, C, 1, 1] where the layer yields [N, C]: a Flatten(axis 1)
  /// follows it (GlobalAveragePool).
  bool flatten_output = false;
};

/// A layer type: what the config may say about it (LayerKeySpec: name, keys, doc), how it is
/// built, and how it is exported. Every field is set by the type's own file.
struct LayerType {
  LayerKeySpec config;  ///< name, keys and their checks, documentation
  /// Builds the layer from a spec whose keys were checked against `config.keys`; InputError
  /// for combinations those checks let through but the layer refuses.
  std::unique_ptr<Layer> (*make)(const LayerSpec& spec, const LayerOptions& options) = nullptr;
  /// The ONNX operator of a layer of this type.
  OnnxOp (*onnx)(const LayerSpec& spec) = nullptr;
  /// Name of the type ("conv2d").
  const std::string& name() const noexcept { return config.type; }
};

/// Every built-in layer type, in documentation order.
std::span<const LayerType* const> layer_types();
/// The layer type named `name`; InputError naming the known types when there is none.
const LayerType& layer_type(std::string_view name);

}  // namespace conflux::model
