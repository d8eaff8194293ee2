#include "config_builder.hpp"

#include <charconv>

#include "conflux/core/error.hpp"
#include "conflux/core/suggest.hpp"
#include "cross_key_rules.hpp"
#include "key_values.hpp"

namespace conflux {

double widen_shortest(float value) {
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value);
  double wide = 0;
  std::from_chars(text, written.ptr, wide);
  return wide;
}

ConfigBuilder::ConfigBuilder(const ConfigSources& sources) {
  config_.sources_ = sources;
  config_.sources_.overrides.clear();  // the loader applies them once, to the text
}

void ConfigBuilder::set(const KeySpec& spec, const toml::node& node, const std::string& where) {
  check_value(node, spec, spec.path, where);
  const KeyValue value = to_key_value(node, spec.type);
  if (spec.binding.set != nullptr) {
    spec.binding.set(*this, value);
  } else {
    config_.written_[spec.path] = std::get<std::string>(value);
  }
  record_spelling(spec, node);
  config_.locations_[spec.path] = where;
}

void ConfigBuilder::set(const Setting& setting, std::string_view origin) {
  CONFLUX_REQUIRE(setting.key != "model.layers",
                  "{}: model.layers is a list of [[model.layers]] tables and cannot be set "
                  "through Config::with",
                  origin);
  const KeySpec* spec = find_key(setting.key);
  CONFLUX_REQUIRE(spec != nullptr, "{}: unknown key '{}'{}", origin, setting.key,
                  did_you_mean(setting.key, key_paths()));
  toml::table holder;
  insert_value(holder, "value", setting.value, [](int) { return false; });
  set(*spec, *holder.get("value"), std::string(origin));
}

void ConfigBuilder::record_spelling(const KeySpec& spec, const toml::node& node) {
  std::set<std::string>& spelled = config_.integer_spelled_;
  const std::string entry_prefix = spec.path + "[";
  spelled.erase(spec.path);
  for (auto it = spelled.lower_bound(entry_prefix);
       it != spelled.end() && it->starts_with(entry_prefix);) {
    it = spelled.erase(it);
  }
  const bool number_key = spec.type == ValueType::kFloat || spec.type == ValueType::kFloatOrAuto;
  if (number_key && node.is_integer()) spelled.insert(spec.path);
  if (spec.type != ValueType::kFloatList) return;
  const toml::array& entries = *node.as_array();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].is_integer()) spelled.insert(fmt::format("{}[{}]", spec.path, i));
  }
}

Config ConfigBuilder::finish() {
  for (const KeySpec& spec : config_keys()) {
    if (spec.binding.resolve != nullptr) spec.binding.resolve(*this);
  }
  check_cross_key_rules(config_);
  config_.resolved_toml_ = resolved_toml(config_);
  return std::move(config_);
}

}  // namespace conflux
