#pragma once
/// @file layer_spec.hpp
/// One layer as the config describes it ([[model.layers]] tables, with blocks expanded);
/// model::make_layer builds it and model::Model wires the graph from names and inputs.

#include <string>
#include <vector>

namespace conflux {

/// The name that stands for the model's input in `inputs` (inside a block: the block
/// instance's input). No layer may take it.
inline constexpr const char* kModelInputName = "input";

/// Layer description as it comes from the config. The defaults are those of a conv2d layer
/// (the schema's layer keys show them); the loader fills every key a type uses, so that a
/// maxpool from the config never sees the conv2d kernel.
struct LayerSpec {
  std::string type;       ///< one of the types of config/schema's layer_keys()
  int out = 0;            ///< linear: output features; conv2d: output channels
  int kernel = 3;         ///< conv2d kernel size (square); maxpool and avgpool window
  int stride = 1;         ///< conv2d stride; maxpool and avgpool stride (0 = same as kernel)
  int padding = 0;        ///< conv2d zero padding, maxpool -infinity padding
  double rate = 0.5;      ///< dropout: probability of zeroing an element
  double momentum = 0.1;  ///< batchnorm: weight of the batch in the running statistics
  double eps = 1e-5;      ///< batchnorm: added to the variance
  /// Graph name other layers' `inputs` refer to (blocks expanded: "stage1.0.conv1"); empty:
  /// unnamed, reachable only as the next layer's default input.
  std::string name{};
  /// Names of the layers whose outputs this one takes ("input" = the model's input); empty:
  /// the previous layer's output (the model's input for the first layer).
  std::vector<std::string> inputs{};
  /// Where the layer was written ("file:line:column"), for errors; empty when built in code.
  std::string where{};
  /// Same type, values and graph wiring (where it was written does not count).
  bool operator==(const LayerSpec& o) const {
    return type == o.type && out == o.out && kernel == o.kernel && stride == o.stride &&
           padding == o.padding && rate == o.rate && momentum == o.momentum && eps == o.eps &&
           name == o.name && inputs == o.inputs;
  }
};

}  // namespace conflux
