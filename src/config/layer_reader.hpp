#pragma once
// Reading [[model.layers]] and the [[model.blocks.NAME]] they repeat into LayerSpecs, blocks
// expanded in place. Private to src/config; model::Model wires and checks the graph.

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <vector>

#include "conflux/config/layer_spec.hpp"

namespace conflux {

/// Turns a TOML source region into "file:line:column" (or the --set text).
using Locate = std::function<std::string(const toml::source_region&)>;

/// The model's layers from a parsed config, with every block instance replaced by its layers
/// (named INSTANCE.REPEAT.LAYER). InputError naming file:line for a bad layer or block.
std::vector<LayerSpec> read_model_layers(const toml::table& root, const std::string& source_name,
                                         const Locate& locate);

}  // namespace conflux
