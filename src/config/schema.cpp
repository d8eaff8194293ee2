#include "conflux/config/schema.hpp"

#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "config_builder.hpp"

namespace conflux {
namespace {

constexpr double kIntMax = std::numeric_limits<int>::max();

// The `range` column of keys.hpp.
struct Range {
  std::optional<double> min, max;
  bool min_exclusive = false;
};
constexpr Range unbounded{};
constexpr Range in(double min, double max) {
  return {min, max, false};
}
constexpr Range above(double min, double max) {
  return {min, max, true};
}

// The TOML text of a `default` column: its C++ spelling, with a braced list in brackets.
std::string default_toml(std::string_view spelling) {
  if (spelling == "CONFLUX_REQUIRED") return "";
  if (spelling.starts_with("{")) {
    return fmt::format("[{}]", spelling.substr(1, spelling.size() - 2));
  }
  return std::string(spelling);
}

KeySpec key(std::string path, ValueType type, Range range, std::string_view default_spelling,
            std::vector<std::string> choices, std::string doc, KeyBinding binding) {
  return KeySpec{std::move(path),
                 type,
                 range.min,
                 range.max,
                 default_toml(default_spelling),
                 std::move(choices),
                 std::move(doc),
                 range.min_exclusive,
                 binding};
}

#define CONFLUX_UNPAREN(...) __VA_ARGS__
#define CONFLUX_SECTION_TYPE(section) \
  std::remove_cvref_t<decltype(std::declval<const Config&>().section())>
#define CONFLUX_SCHEMA_KEY(section, name, type, default_value, range, choices, doc)                \
  key(#section "." #name, value_type_of<type>(), range, #default_value, {CONFLUX_UNPAREN choices}, \
      doc, ConfigBuilder::member_binding<&CONFLUX_SECTION_TYPE(section)::name>()),
#define CONFLUX_SCHEMA_HOOKED(section, name, type, value_type, default_value, range, choices, doc) \
  key(#section "." #name, ValueType::value_type, range, #default_value, {CONFLUX_UNPAREN choices}, \
      doc, ConfigBuilder::section##_##name()),

std::vector<KeySpec> make_keys() {
  return {CONFLUX_ALL_KEYS(CONFLUX_SCHEMA_KEY, CONFLUX_SCHEMA_HOOKED)};
}

std::string format_bound(double v, ValueType type) {
  if (v == kIntMax) return "inf";
  return type == ValueType::kInt ? fmt::format("{}", static_cast<long long>(v))
                                 : fmt::format("{}", v);
}

std::string shown_default(const KeySpec& k) {
  return k.default_toml.empty() ? "**required**" : "`" + k.default_toml + "`";
}

}  // namespace

const std::vector<KeySpec>& config_keys() {
  static const std::vector<KeySpec> keys = make_keys();
  return keys;
}

double LayerKey::get(const LayerSpec& spec) const {
  return std::visit([&](auto m) { return static_cast<double>(spec.*m); }, member);
}

void LayerKey::set(LayerSpec& spec, double value) const {
  std::visit([&](auto m) { spec.*m = static_cast<std::remove_cvref_t<decltype(spec.*m)>>(value); },
             member);
}

std::string LayerKey::text(const LayerSpec& spec) const {
  return std::visit([&](auto m) { return fmt::format("{}", spec.*m); }, member);
}

LayerKey layer_int_key(std::string name, int LayerSpec::*member, int min, int max,
                       std::string default_toml, std::string doc) {
  return LayerKey{key(std::move(name), ValueType::kInt, in(min, max), default_toml, {},
                      std::move(doc), KeyBinding{}),
                  member};
}

LayerKey layer_real_key(std::string name, double LayerSpec::*member, double min, double max,
                        bool min_exclusive, std::string doc) {
  return LayerKey{key(std::move(name), ValueType::kFloat, {min, max, min_exclusive},
                      fmt::format("{}", LayerSpec{}.*member), {}, std::move(doc), KeyBinding{}),
                  member};
}

const KeySpec* find_key(std::string_view path) {
  for (const auto& k : config_keys())
    if (k.path == path) return &k;
  return nullptr;
}

const std::vector<std::string>& key_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> all;
    for (const auto& k : config_keys()) all.push_back(k.path);
    all.push_back("model.layers");
    return all;
  }();
  return paths;
}

std::string_view section_of(std::string_view path) {
  return path.substr(0, path.find('.'));
}

std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "an integer";
    case ValueType::kFloat:
      return "a number";
    case ValueType::kBool:
      return "a boolean";
    case ValueType::kString:
      return "a string";
    case ValueType::kFloatList:
      return "a list of numbers";
    case ValueType::kFloatOrAuto:
      return "\"auto\" or a number";
  }
  return "a value";
}

std::string describe_expected(const KeySpec& spec) {
  std::string text(type_name(spec.type));
  if (!spec.choices.empty()) {
    text += " (one of";
    for (std::size_t i = 0; i < spec.choices.size(); ++i)
      text += fmt::format("{} \"{}\"", i ? "," : "", spec.choices[i]);
    text += ")";
  }
  if (spec.min && spec.max) {
    text += fmt::format(" in {}{}, {}]", spec.min_exclusive ? "(" : "[",
                        format_bound(*spec.min, spec.type), format_bound(*spec.max, spec.type));
  } else if (spec.min) {
    text += fmt::format(" >= {}", format_bound(*spec.min, spec.type));
  }
  if (spec.type == ValueType::kFloatList && spec.min) text.insert(0, "each entry of ");
  return text;
}

std::string config_reference_markdown() {
  std::string md = "| key | type and range | default | meaning |\n|---|---|---|---|\n";
  for (const auto& k : config_keys()) {
    md += fmt::format("| `{}` | {} | {} | {} |\n", k.path, describe_expected(k), shown_default(k),
                      k.doc);
  }
  md +=
      "\n### `[[model.layers]]`\n\nThe model is a list of layer tables in order; each has a "
      "`type` and the keys of its type. The input shape comes from the dataset; the last layer "
      "must produce one output per class. Every layer may also have a `name` (a string other "
      "layers refer to) and `inputs` (a list of names whose outputs it takes; `\"input\"` is "
      "the model's input); without `inputs` a layer takes the previous layer's output. A layer "
      "table with `type = \"block\"` repeats a block of `[[model.blocks.NAME]]` layer tables "
      "(docs/models.md).\n\n| type | key | type and range | default | meaning "
      "|\n|---|---|---|---|---|\n";
  for (const auto& layer : layer_keys()) {
    md += fmt::format("| `{}` | | | | {} |\n", layer.type, layer.doc);
    for (const auto& k : layer.keys) {
      md += fmt::format("| | `{}` | {} | {} | {} |\n", k.path, describe_expected(k),
                        shown_default(k), k.doc);
    }
  }
  return md;
}

}  // namespace conflux
