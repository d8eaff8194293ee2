#include "conflux/config/identity.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

#include "conflux/config/schema.hpp"

namespace conflux {

namespace {

// Paths that may differ between nodes (a node-local copy of the data, a plugin installed
// elsewhere) without changing what the job computes.
constexpr std::array<std::string_view, 4> kPerNodePaths = {"data.dir", "data.hdf5_file",
                                                           "data.path", "transform.plugin"};

// A number as its shortest round-trip spelling (0.1, not 0.10000000000000001), for messages;
// any other value as it is.
std::string shortest(const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return text;
  return fmt::format("{}", value);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> rank_invariant_values(const Config& config) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const KeySpec& spec : config_keys()) {
    if (std::find(kPerNodePaths.begin(), kPerNodePaths.end(), spec.path) != kPerNodePaths.end()) {
      continue;
    }
    values.emplace_back(spec.path, shortest(config.value_text(spec.path)));
  }
  // Each layer as its type and every key its type has.
  std::string layers;
  for (const LayerSpec& layer : config.layers()) {
    layers += layer.type;
    for (const LayerKeySpec& spec : layer_keys()) {
      if (spec.type != layer.type) continue;
      for (const LayerKey& key : spec.keys)
        layers += fmt::format(" {}={}", key.path, key.text(layer));
    }
    if (!layer.name.empty()) layers += fmt::format(" name={}", layer.name);
    if (!layer.inputs.empty()) layers += fmt::format(" inputs={}", fmt::join(layer.inputs, ","));
    layers += "; ";
  }
  values.emplace_back("model.layers", layers);
  return values;
}

}  // namespace conflux
