#include "conflux/model/graph.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "conflux/core/error.hpp"
#include "conflux/core/suggest.hpp"

namespace conflux::model {
namespace {

constexpr const char* kInputName = kModelInputName;

// Name -> layer index; InputError for a name given twice.
std::map<std::string, std::size_t> index_names(const std::vector<LayerSpec>& specs) {
  std::map<std::string, std::size_t> names;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name.empty()) continue;
    CONFLUX_REQUIRE(specs[i].name != kInputName,
                    "{}: the name '{}' is reserved for the model's input", layer_label(specs, i),
                    kInputName);
    const auto [it, added] = names.emplace(specs[i].name, i);
    CONFLUX_REQUIRE(added, "{}: the name '{}' is already taken by {}", layer_label(specs, i),
                    specs[i].name, layer_label(specs, it->second));
  }
  return names;
}

// Each layer's inputs by index: its named ones, else the previous layer (the model's input
// for the first).
std::vector<std::vector<std::size_t>> resolve_inputs(const std::vector<LayerSpec>& specs) {
  const std::map<std::string, std::size_t> names = index_names(specs);
  std::vector<std::string> known = {kInputName};
  for (const auto& [name, index] : names) known.push_back(name);
  std::vector<std::vector<std::size_t>> inputs(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].inputs.empty()) {
      inputs[i].push_back(i == 0 ? kModelInput : i - 1);
      continue;
    }
    for (const std::string& name : specs[i].inputs) {
      if (name == kInputName) {
        inputs[i].push_back(kModelInput);
        continue;
      }
      const auto it = names.find(name);
      CONFLUX_REQUIRE(it != names.end(), "{}: input '{}' is not the name of any layer{}",
                      layer_label(specs, i), name, did_you_mean(name, known));
      CONFLUX_REQUIRE(it->second != i, "{}: takes its own output as input", layer_label(specs, i));
      inputs[i].push_back(it->second);
    }
  }
  return inputs;
}

// One cycle among the layers not yet ordered, as "a -> b -> a", for the error.
std::string find_cycle(const std::vector<LayerSpec>& specs,
                       const std::vector<std::vector<std::size_t>>& inputs,
                       const std::vector<bool>& done) {
  std::size_t at = 0;
  while (done[at]) ++at;
  // Walking inputs among unordered layers must come back to a layer already seen.
  std::vector<std::size_t> path;
  std::vector<int> seen(specs.size(), -1);
  while (seen[at] < 0) {
    seen[at] = static_cast<int>(path.size());
    path.push_back(at);
    for (const std::size_t in : inputs[at]) {
      if (in != kModelInput && !done[in]) {
        at = in;
        break;
      }
    }
  }
  std::vector<std::string> names;
  for (std::size_t k = static_cast<std::size_t>(seen[at]); k < path.size(); ++k)
    names.push_back(layer_label(specs, path[k]));
  names.push_back(layer_label(specs, at));
  std::reverse(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, " -> "));
}

// Inputs before the layers that take them; among ready layers, the specs' order first (so a
// chain runs as written). InputError naming a cycle.
std::vector<std::size_t> execution_order(const std::vector<LayerSpec>& specs,
                                         const std::vector<std::vector<std::size_t>>& inputs) {
  std::vector<bool> done(specs.size(), false);
  std::vector<std::size_t> order;
  std::set<std::size_t> ready;
  const auto is_ready = [&](std::size_t i) {
    return std::ranges::all_of(inputs[i],
                               [&](std::size_t in) { return in == kModelInput || done[in]; });
  };
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (is_ready(i)) ready.insert(i);
  while (!ready.empty()) {
    const std::size_t next = *ready.begin();
    ready.erase(ready.begin());
    done[next] = true;
    order.push_back(next);
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!done[i] && !ready.contains(i) && is_ready(i)) ready.insert(i);
  }
  CONFLUX_REQUIRE(order.size() == specs.size(), "the model's layers form a cycle: {}",
                  find_cycle(specs, inputs, done));
  return order;
}

}  // namespace

bool GraphWiring::chain() const {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != std::vector<std::size_t>{i == 0 ? kModelInput : i - 1}) return false;
  }
  return true;
}

std::string layer_label(const std::vector<LayerSpec>& specs, std::size_t index) {
  const LayerSpec& spec = specs[index];
  std::string label = fmt::format("layer {} ({}", index, spec.type);
  if (!spec.name.empty()) label += fmt::format(" '{}'", spec.name);
  if (!spec.where.empty()) label += fmt::format(" at {}", spec.where);
  return label + ")";
}

GraphWiring wire_graph(const std::vector<LayerSpec>& specs) {
  GraphWiring wiring;
  wiring.inputs = resolve_inputs(specs);
  wiring.order = execution_order(specs, wiring.inputs);
  wiring.output = specs.size() - 1;
  wiring.consumers.resize(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    for (const std::size_t in : wiring.inputs[i])
      if (in != kModelInput) wiring.consumers[in].push_back(i);
  }
  CONFLUX_REQUIRE(wiring.consumers[wiring.output].empty(),
                  "{}: the model's output (the last layer) cannot be the input of {}",
                  layer_label(specs, wiring.output),
                  wiring.consumers[wiring.output].empty()
                      ? ""
                      : layer_label(specs, wiring.consumers[wiring.output].front()));
  for (std::size_t i = 0; i + 1 < specs.size(); ++i) {
    CONFLUX_REQUIRE(!wiring.consumers[i].empty(),
                    "{}: no layer takes its output (the model's output is the last layer, {})",
                    layer_label(specs, i), layer_label(specs, wiring.output));
  }
  return wiring;
}

}  // namespace conflux::model
