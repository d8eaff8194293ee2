#pragma once
// The one place that fills a Config (its only friend): the loader and Config::with hand it
// checked values key by key through the schema bindings; finish() resolves the hooked keys,
// checks the cross-key rules and writes the resolved TOML. Private to src/config.

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <type_traits>

#include "conflux/config/config.hpp"
#include "conflux/config/schema.hpp"

namespace conflux {

/// A float as the double of the shortest decimal that reads back as it: 0.1f becomes what TOML
/// reads from `0.1`, not 0.100000001490116, so float keys show the value they were given.
double widen_shortest(float value);

/// The KeyValue of a typed member.
template <class T>
KeyValue member_value(const T& member) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                std::is_same_v<T, std::string>) {
    return member;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<std::int64_t>(member);
  } else if constexpr (std::is_same_v<T, float>) {
    return widen_shortest(member);
  } else if constexpr (std::is_same_v<T, std::vector<float>>) {
    std::vector<double> values;
    for (const float v : member) values.push_back(widen_shortest(v));
    return values;
  } else {
    static_assert(std::is_same_v<T, std::filesystem::path>);
    return member.string();
  }
}

/// Stores a checked KeyValue (of the member's ValueType) into a typed member.
template <class T>
void assign_member(T& member, const KeyValue& value) {
  if constexpr (std::is_same_v<T, bool>) {
    member = std::get<bool>(value);
  } else if constexpr (std::is_integral_v<T>) {
    member = static_cast<T>(std::get<std::int64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    member = static_cast<T>(std::get<double>(value));
  } else if constexpr (std::is_same_v<T, std::vector<float>>) {
    member.clear();
    for (const double v : std::get<std::vector<double>>(value))
      member.push_back(static_cast<float>(v));
  } else {
    member = std::get<std::string>(value);  // std::string or std::filesystem::path
  }
}

/// The ValueType a member of type T holds.
template <class T>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return ValueType::kBool;
  } else if constexpr (std::is_integral_v<T>) {
    return ValueType::kInt;
  } else if constexpr (std::is_floating_point_v<T>) {
    return ValueType::kFloat;
  } else if constexpr (std::is_same_v<T, std::vector<float>>) {
    return ValueType::kFloatList;
  } else {
    static_assert(std::is_same_v<T, std::string> || std::is_same_v<T, std::filesystem::path>);
    return ValueType::kString;
  }
}

/// The section struct of a pointer to a section member.
template <class>
struct SectionOf;
template <class Section, class T>
struct SectionOf<T Section::*> {
  using type = Section;
};

/// Fills a Config: values checked key by key go through the schema bindings into the typed
/// sections; finish() resolves, checks and writes the rest.
class ConfigBuilder {
 public:
  /// A config with every member at its C++ default, to be loaded with `sources`.
  explicit ConfigBuilder(const ConfigSources& sources);
  /// A copy of `base` to derive another config from.
  explicit ConfigBuilder(const Config& base) : config_(base) {}

  /// Checks `node` against `spec` (InputError "where: key: expected ..., got ...") and stores
  /// it through the key's binding; `where` becomes Config::where() of the key.
  void set(const KeySpec& spec, const toml::node& node, const std::string& where);
  /// Sets a key by code; InputError naming `origin` for an unknown key or a bad value.
  void set(const Setting& setting, std::string_view origin);
  /// The layers the loader checked; `where` becomes Config::where("model.layers").
  void set_layers(std::vector<LayerSpec> layers, const std::string& where) {
    config_.layers_ = std::move(layers);
    config_.locations_["model.layers"] = where;
  }
  /// Resolves the hooked keys, checks the cross-key rules and writes the resolved TOML.
  Config finish();

  /// The section holding members of type `Section`, for the bindings.
  template <class Section>
  Section& section() {
    return std::get<Section>(config_.sections_);
  }
  /// The config as filled so far.
  const Config& config() const { return config_; }
  /// What a hooked key was written as (its hook resolves the member from it).
  const std::string& written(const std::string& path) const { return config_.written_.at(path); }
  /// The environment the config is loaded with.
  const ConfigSources& sources() const { return config_.sources_; }

  /// The binding of a plain key to `Member` of its section.
  template <auto Member>
  static KeyBinding member_binding() {
    using Section = typename SectionOf<decltype(Member)>::type;
    return KeyBinding{
        [](const Config& c) -> KeyValue {
          return member_value(std::get<Section>(c.sections_).*Member);
        },
        [](ConfigBuilder& b, const KeyValue& v) { assign_member(b.section<Section>().*Member, v); },
        nullptr};
  }

  /// Puts `spec`'s value in `config` into its section table of `root`, spelled as given.
  static void put_key(toml::table& root, const Config& config, const KeySpec& spec);
  /// The resolved TOML of `config`: every key through its binding, then model.layers.
  static std::string resolved_toml(const Config& config);
  /// Every key through its binding, then the layers.
  static toml::table resolved_table(const Config& config);

  // The hooked keys of keys.hpp, named <section>_<name> (key_hooks.cpp).
  static KeyBinding run_dir();             ///< {time} and {name} substituted
  static KeyBinding data_dir();            ///< else sources().env_data_dir; absolute or empty
  static KeyBinding data_hdf5_file();      ///< absolute when given
  static KeyBinding data_path();           ///< absolute when given
  static KeyBinding data_offload_ratio();  ///< "auto" or a number
  static KeyBinding transform_plugin();    ///< absolute and normalised when given
  static KeyBinding checkpoint_dir();      ///< <run.dir>/checkpoints when empty

 private:
  void record_spelling(const KeySpec& spec, const toml::node& node);
  Config config_;
};

}  // namespace conflux
