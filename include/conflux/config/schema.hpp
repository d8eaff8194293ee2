#pragma once
/// @file schema.hpp
/// The schema of experiment configs: every key with its type, range, default, meaning and the
/// binding to its typed member, expanded from keys.hpp. The loader and Config::with validate
/// against it, the resolved TOML is written through it, and `conflux config reference` prints
/// it as Markdown.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "conflux/config/config.hpp"

namespace conflux {

class ConfigBuilder;  // src/config: the one place that fills a Config

/// Value types a config key can hold.
enum class ValueType { kInt, kFloat, kBool, kString, kFloatList, kFloatOrAuto };

/// How a key's value reaches its typed member and comes back out.
struct KeyBinding {
  /// The value as resolved_toml() shows it.
  KeyValue (*get)(const Config&) = nullptr;
  /// Stores a checked value in the member; null for a hooked path, kept as written instead.
  void (*set)(ConfigBuilder&, const KeyValue&) = nullptr;
  /// Hooked keys: derives the member from what was written (and other keys, the sources).
  void (*resolve)(ConfigBuilder&) = nullptr;
};

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
  KeyBinding binding;                ///< the typed member (none for layer keys)
};

/// One key of a [[model.layers]] table and the LayerSpec member it sets (an integer or a
/// real number, as KeySpec::type says).
struct LayerKey : KeySpec {
  std::variant<int LayerSpec::*, double LayerSpec::*> member;  ///< e.g. &LayerSpec::kernel
  /// The member's value in `spec` (integers exactly).
  double get(const LayerSpec& spec) const;
  /// Sets the member in `spec` (integers: `value` is whole, checked by the loader).
  void set(LayerSpec& spec, double value) const;
  /// The member's value as TOML text ("3", "0.1").
  std::string text(const LayerSpec& spec) const;
};

/// Keys allowed in one [[model.layers]] table, by layer type.
struct LayerKeySpec {
  std::string type;            ///< layer type
  std::vector<LayerKey> keys;  ///< keys besides "type" (paths are bare names)
  std::string doc;             ///< what the layer does
  /// Fills values that depend on other keys once all are read (a pool's stride 0: its
  /// window); nullptr: none.
  void (*complete)(LayerSpec& spec) = nullptr;
};

/// A [[model.layers]] key setting an integer member of LayerSpec: a whole number in
/// [min, max]; `default_toml` empty means required.
LayerKey layer_int_key(std::string name, int LayerSpec::*member, int min, int max,
                       std::string default_toml, std::string doc);
/// A [[model.layers]] key setting a real member of LayerSpec: a number in [min, max] (or
/// (min, max] when `min_exclusive`), defaulting to LayerSpec's own value of the member.
LayerKey layer_real_key(std::string name, double LayerSpec::*member, double min, double max,
                        bool min_exclusive, std::string doc);

/// All scalar keys, in documentation order.
const std::vector<KeySpec>& config_keys();
/// Per-type keys of [[model.layers]] tables, in documentation order. Declared here, where the
/// loader reads it, and defined by the layer registry (src/model/layer_registry.cpp), where
/// each layer type declares its keys beside its kernels (docs/design.md, "Adding a layer").
const std::vector<LayerKeySpec>& layer_keys();
/// The spec of a dotted key, or nullptr.
const KeySpec* find_key(std::string_view path);
/// Every dotted key a config may hold, model.layers included (for did-you-mean hints).
const std::vector<std::string>& key_paths();
/// The section part of a dotted key ("train" for "train.lr").
std::string_view section_of(std::string_view path);
/// Human name of a type, e.g. "an integer".
std::string_view type_name(ValueType type);
/// Describes the allowed range/choices of a key, e.g. "an integer in [1, 1024]".
std::string describe_expected(const KeySpec& spec);
/// The whole schema as a Markdown reference (docs/config.md embeds it).
std::string config_reference_markdown();

}  // namespace conflux
