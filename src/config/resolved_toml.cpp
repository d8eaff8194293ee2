// The resolved config written from the typed sections: every key of the schema through its
// binding (the same keys and values a run reads), then the layers.

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "config_builder.hpp"
#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"
#include "key_values.hpp"

namespace conflux {

namespace {

// Each layer with the keys its type uses, as the schema lists them.
toml::array layers_toml(const std::vector<LayerSpec>& layers) {
  toml::array array;
  for (const auto& l : layers) {
    toml::table t{{"type", l.type}};
    const auto& types = layer_keys();
    const auto spec = std::find_if(types.begin(), types.end(),
                                   [&](const LayerKeySpec& k) { return k.type == l.type; });
    CONFLUX_CHECK(spec != types.end(), "layer type '{}' is not in the schema", l.type);
    for (const LayerKey& k : spec->keys) {
      if (k.type == ValueType::kInt) {
        t.insert(k.path, static_cast<std::int64_t>(k.get(l)));
      } else {
        t.insert(k.path, k.get(l));
      }
    }
    // Blocks are written expanded: the graph as the run built it.
    if (!l.name.empty()) t.insert("name", l.name);
    if (!l.inputs.empty()) {
      toml::array inputs;
      for (const std::string& input : l.inputs) inputs.push_back(input);
      t.insert("inputs", std::move(inputs));
    }
    array.push_back(std::move(t));
  }
  return array;
}

}  // namespace

void ConfigBuilder::put_key(toml::table& root, const Config& config, const KeySpec& spec) {
  const std::string_view section = section_of(spec.path);
  if (!root.contains(section)) root.insert(section, toml::table{});
  const auto spelled_int = [&](int index) {
    return config.integer_spelled_.contains(index < 0 ? spec.path
                                                      : fmt::format("{}[{}]", spec.path, index));
  };
  insert_value(*root[section].as_table(), std::string_view(spec.path).substr(section.size() + 1),
               spec.binding.get(config), spelled_int);
}

toml::table ConfigBuilder::resolved_table(const Config& config) {
  toml::table root;
  for (const KeySpec& spec : config_keys()) put_key(root, config, spec);
  root.insert("model", toml::table{{"layers", layers_toml(config.layers())}});
  return root;
}

std::string ConfigBuilder::resolved_toml(const Config& config) {
  std::ostringstream out;
  out << "# Fully resolved conflux config (every key, defaults filled in).\n"
      << resolved_table(config) << "\n";
  return out.str();
}

std::string Config::launchable_toml() const {
  toml::table root = ConfigBuilder::resolved_table(*this);
  root["run"].as_table()->insert_or_assign("dir", written_.at("run.dir"));
  std::ostringstream out;
  out << "# Resolved conflux config (every key, defaults filled in; run.dir as written).\n"
      << root << "\n";
  return out.str();
}

std::string Config::value_text(std::string_view key_path) const {
  const KeySpec* spec = find_key(key_path);
  CONFLUX_REQUIRE(spec != nullptr, "unknown config key '{}'", key_path);
  toml::table root;
  ConfigBuilder::put_key(root, *this, *spec);
  return node_text(*root.at_path(key_path).node());
}

}  // namespace conflux
