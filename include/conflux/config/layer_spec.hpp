#pragma once
/// @file layer_spec.hpp
/// One layer as the config describes it ([[model.layers]] tables); model::make_layer builds it.

#include <string>

namespace conflux {

/// Layer description as it comes from the config. The defaults are those of a conv2d layer
/// (the schema's layer keys show them); the loader fills every key a type uses, so that a
/// maxpool from the config never sees the conv2d kernel.
struct LayerSpec {
  std::string type;  ///< one of the types of config/schema's layer_keys()
  int out = 0;       ///< linear: output features; conv2d: output channels
  int kernel = 3;    ///< conv2d kernel size (square); maxpool and avgpool window
  int stride = 1;    ///< conv2d stride; maxpool and avgpool stride (0 = same as kernel)
  int padding = 0;   ///< conv2d zero padding
  /// Same type and values.
  bool operator==(const LayerSpec&) const = default;
};

}  // namespace conflux
