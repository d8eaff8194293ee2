#include "key_values.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "conflux/core/error.hpp"
#include "conflux/core/suggest.hpp"

namespace conflux {

namespace {

std::string describe_node(const toml::node& node) {
  std::ostringstream out;
  if (node.is_table()) return "a table";
  if (node.is_array()) out << "the list ";
  const char* kind = node.is_string()           ? "string "
                     : node.is_integer()        ? "integer "
                     : node.is_floating_point() ? "number "
                     : node.is_boolean()        ? "boolean "
                                                : "";
  if (!node.is_array()) out << kind;
  node.visit([&](const auto& n) { out << n; });
  return out.str();
}

// Checks one value of a key; `fail` throws with what was got.
class ValueCheck {
 public:
  ValueCheck(const KeySpec& spec, std::string_view label, std::string_view where)
      : spec_(spec), label_(label), where_(where) {}

  void run(const toml::node& node) const {
    switch (spec_.type) {
      case ValueType::kInt:
        if (!node.is_integer()) fail(describe_node(node));
        in_range(static_cast<double>(*node.value<std::int64_t>()), describe_node(node));
        break;
      case ValueType::kFloatOrAuto:
        if (node.is_string() && *node.value<std::string>() == "auto") break;
        [[fallthrough]];
      case ValueType::kFloat:
        if (!node.is_number()) fail(describe_node(node));
        in_range(*node.value<double>(), describe_node(node));
        break;
      case ValueType::kBool:
        if (!node.is_boolean()) fail(describe_node(node));
        break;
      case ValueType::kString:
        if (!node.is_string()) fail(describe_node(node));
        one_of_choices(*node.value<std::string>());
        break;
      case ValueType::kFloatList:
        list_of_numbers(node);
        break;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& got) const {
    CONFLUX_INPUT_ERROR("{}: {}: expected {}, got {}", where_, label_, describe_expected(spec_),
                        got);
  }

  void in_range(double v, const std::string& shown) const {
    if (!std::isfinite(v)) fail(shown);
    if (spec_.min && (v < *spec_.min || (spec_.min_exclusive && v == *spec_.min))) fail(shown);
    if (spec_.max && v > *spec_.max) fail(shown);
  }

  void one_of_choices(const std::string& value) const {
    if (!spec_.choices.empty() &&
        std::find(spec_.choices.begin(), spec_.choices.end(), value) == spec_.choices.end()) {
      fail(fmt::format("\"{}\"{}", value, did_you_mean(value, spec_.choices)));
    }
  }

  void list_of_numbers(const toml::node& node) const {
    const toml::array* array = node.as_array();
    // Only keys whose default is the empty list accept one (e.g. data.offload_ratios).
    if (array == nullptr || (array->empty() && spec_.default_toml != "[]")) {
      fail(describe_node(node));
    }
    for (const auto& element : *array) {
      if (!element.is_number()) fail(fmt::format("an entry {}", describe_node(element)));
      in_range(*element.value<double>(), fmt::format("{}", *element.value<double>()));
    }
  }

  const KeySpec& spec_;
  std::string_view label_;
  std::string_view where_;
};

}  // namespace

void check_value(const toml::node& node, const KeySpec& spec, std::string_view label,
                 std::string_view where) {
  ValueCheck(spec, label, where).run(node);
}

KeyValue to_key_value(const toml::node& node, ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return *node.value<std::int64_t>();
    case ValueType::kFloat:
      return *node.value<double>();
    case ValueType::kFloatOrAuto:
      if (node.is_string()) return *node.value<std::string>();
      return *node.value<double>();
    case ValueType::kBool:
      return *node.value<bool>();
    case ValueType::kString:
      return *node.value<std::string>();
    case ValueType::kFloatList: {
      std::vector<double> values;
      for (const auto& element : *node.as_array()) values.push_back(*element.value<double>());
      return values;
    }
  }
  CONFLUX_RUNTIME_ERROR("unknown value type {}", static_cast<int>(type));
}

void insert_value(toml::table& table, std::string_view name, const KeyValue& value,
                  const IntegerSpelling& spelled_int) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          if (spelled_int(-1)) {
            table.insert_or_assign(name, static_cast<std::int64_t>(v));
          } else {
            table.insert_or_assign(name, v);
          }
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          toml::array array;
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (spelled_int(static_cast<int>(i))) {
              array.push_back(static_cast<std::int64_t>(v[i]));
            } else {
              array.push_back(v[i]);
            }
          }
          table.insert_or_assign(name, std::move(array));
        } else {
          table.insert_or_assign(name, v);
        }
      },
      value);
}

std::string node_text(const toml::node& node) {
  std::ostringstream out;
  if (const auto* array = node.as_array()) {
    out << *array;
  } else {
    node.visit([&](const auto& v) {
      if constexpr (toml::is_value<decltype(v)>) out << v;
    });
  }
  return out.str();
}

}  // namespace conflux
