#pragma once
/// @file schema.hpp
/// The schema of experiment configs: every key with its type, range, default and meaning.
/// The loader validates against it and `conflux config reference` prints it as Markdown.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conflux {

/// Value types a config key can hold.
enum class ValueType { kInt, kFloat, kBool, kString, kFloatList, kFloatOrAuto };

/// One documented config key.
struct KeySpec {
  std::string path;                  ///< dotted, e.g. "train.lr"
  ValueType type = ValueType::kInt;  ///< expected type
  std::optional<double> min;         ///< inclusive lower bound (numbers, list entries)
  std::optional<double> max;         ///< inclusive upper bound
  std::string default_toml;          ///< default as a TOML value; empty = required
  std::vector<std::string> choices;  ///< allowed strings (empty = any)
  std::string doc;                   ///< one-sentence meaning
  bool min_exclusive = false;        ///< lower bound is exclusive (e.g. lr > 0)
};

/// Keys allowed in one [[model.layers]] table, by layer type.
struct LayerKeySpec {
  std::string type;           ///< layer type
  std::vector<KeySpec> keys;  ///< keys besides "type" (paths are bare names)
  std::string doc;            ///< what the layer does
};

/// All scalar keys, in documentation order.
const std::vector<KeySpec>& config_keys();
/// Per-type keys of [[model.layers]] tables.
const std::vector<LayerKeySpec>& layer_keys();
/// The spec of a dotted key, or nullptr.
const KeySpec* find_key(std::string_view path);
/// Human name of a type, e.g. "an integer".
std::string_view type_name(ValueType type);
/// Describes the allowed range/choices of a key, e.g. "an integer in [1, 1024]".
std::string describe_expected(const KeySpec& spec);
/// The whole schema as a Markdown reference (docs/config.md embeds it).
std::string config_reference_markdown();

}  // namespace conflux
