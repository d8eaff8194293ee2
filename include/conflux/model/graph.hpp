#pragma once
/// @file graph.hpp
/// The wiring of a model's layers from their specs: which outputs each layer takes and the
/// order in which they run. A straight list (no names, no inputs) is a chain.

#include <cstddef>
#include <string>
#include <vector>

#include "conflux/config/layer_spec.hpp"

namespace conflux::model {

/// Stands for the model's input in GraphWiring::inputs.
inline constexpr std::size_t kModelInput = static_cast<std::size_t>(-1);

/// Who feeds whom, by layer index (the specs' order, which also orders the parameters).
struct GraphWiring {
  std::vector<std::vector<std::size_t>> inputs;     ///< per layer: layer indices or kModelInput
  std::vector<std::vector<std::size_t>> consumers;  ///< per layer: layers taking its output
  std::vector<std::size_t> order;  ///< execution order: inputs first, else the specs' order
  std::size_t output = 0;          ///< the model's output: the last layer
  /// True when every layer takes the previous one's output (the model of a straight list).
  bool chain() const;
};

/// How a layer is named in errors: "layer 3 (conv2d)", with its name and where it was written
/// when known: "layer 3 (conv2d 'stage1.0.conv1' at m.toml:12:1)".
std::string layer_label(const std::vector<LayerSpec>& specs, std::size_t index);

/// Wires `specs`; InputError (naming the layer and where it was written) for an input name no
/// layer has, a name given twice, a cycle, or a layer whose output nothing takes.
GraphWiring wire_graph(const std::vector<LayerSpec>& specs);

}  // namespace conflux::model
