#pragma once
/// @file run_record_io.hpp
/// The one writer, reader and TensorBoard view of the run records (telemetry/run_record.hpp):
/// each walks a record's field list, so none names a field.

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "conflux/core/json.hpp"
#include "conflux/core/json_reader.hpp"
#include "conflux/telemetry/event_file.hpp"
#include "conflux/telemetry/run_record.hpp"

namespace conflux::telemetry {

namespace record_detail {

template <typename T>
struct Optional : std::false_type {};
template <typename T>
struct Optional<std::optional<T>> : std::true_type {};
template <typename T>
struct Vector : std::false_type {};
template <typename T>
struct Vector<std::vector<T>> : std::true_type {};

/// "a number", "a string", ...: what a field of type T holds, for errors.
template <typename T>
constexpr std::string_view kind() {
  if constexpr (Optional<T>::value) {
    return kind<typename T::value_type>();
  } else if constexpr (std::is_same_v<T, bool>) {
    return "true or false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return "a number";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "a string";
  } else {
    return "an array of objects";
  }
}

/// InputError "<where>: expected <expected> at "<key>", found <found>".
[[noreturn]] void wrong_value(const std::string& where, std::string_view key,
                              std::string_view expected, std::string_view found);

/// `value` as an integer of [min, max]; InputError naming where and key when it is not one.
long double whole_number(double value, long double min, long double max, const std::string& where,
                         std::string_view key);

}  // namespace record_detail

template <typename R>
std::string record_json(const R& record);
template <typename R>
void read_record(const JsonValue& line, const std::string& where, R& record);

namespace record_detail {

template <typename T>
void append_value(std::string& out, const T& value) {
  if constexpr (Optional<T>::value) {
    append_value(out, *value);
  } else if constexpr (std::is_same_v<T, bool>) {
    out += value ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<T>) {
    out += json_number(value);
  } else if constexpr (std::is_integral_v<T>) {
    out += std::to_string(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    out += json_string(value);
  } else {
    static_assert(Vector<T>::value, "a record field is a number, bool, string or vector");
    out += '[';
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ", ";
      out += record_json(value[i]);
    }
    out += ']';
  }
}

template <typename T>
void read_value(const JsonValue& v, T& out, const std::string& where, std::string_view key) {
  constexpr std::string_view expected = kind<T>();
  if constexpr (Optional<T>::value) {
    typename T::value_type inner = record_unset<typename T::value_type>();
    read_value(v, inner, where, key);
    out = std::move(inner);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_bool()) wrong_value(where, key, expected, v.type_name());
    out = v.as_bool();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_null()) {
      out = record_unset<T>();  // conflux writes NaN as null
    } else {
      if (!v.is_number()) wrong_value(where, key, expected, v.type_name());
      out = static_cast<T>(v.as_number());
    }
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number()) wrong_value(where, key, expected, v.type_name());
    out = static_cast<T>(whole_number(v.as_number(), std::numeric_limits<T>::min(),
                                      std::numeric_limits<T>::max(), where, key));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) wrong_value(where, key, expected, v.type_name());
    out = v.as_string();
  } else {
    if (!v.is_array()) wrong_value(where, key, expected, v.type_name());
    out.clear();
    for (const JsonValue& element : v.as_array()) {
      if (!element.is_object()) wrong_value(where, key, expected, element.type_name());
      read_record(element, where, out.emplace_back());
    }
  }
}

}  // namespace record_detail

/// The record as one JSON object on one line (without the newline): every field in list
/// order as `"name": value`, separated by ", "; an unset std::optional field is left out.
template <typename R>
std::string record_json(const R& record) {
  std::string out = "{";
  R::for_each_field(record, [&out](const FieldInfo& f, const auto& value) {
    if constexpr (record_detail::Optional<std::decay_t<decltype(value)>>::value) {
      if (!value) return;
    }
    if (out.size() > 1) out += ", ";
    out += json_string(f.name);
    out += ": ";
    record_detail::append_value(out, value);
  });
  return out + "}";
}

/// Reads the JSON object `line` into `record`: every field the line holds; a field it lacks
/// keeps its value (unset in a fresh record), and members it has beyond the list are ignored.
/// InputError naming `where` (e.g. "run/steps.jsonl:3") and the key when a required field is
/// missing or null, or a value is not what the list declares (null is NaN for a double).
template <typename R>
void read_record(const JsonValue& line, const std::string& where, R& record) {
  R::for_each_field(record, [&](const FieldInfo& f, auto& value) {
    using T = std::decay_t<decltype(value)>;
    const JsonValue* v = line.find(f.name);
    if (f.required && (v == nullptr || v->is_null())) {
      record_detail::wrong_value(where, f.name, record_detail::kind<T>(),
                                 v == nullptr ? "nothing" : "null");
    }
    if (v != nullptr) record_detail::read_value(*v, value, where, f.name);
  });
}

/// The record's fields that have a TensorBoard tag and a finite value, in list order.
template <typename R>
std::vector<Scalar> tensorboard_scalars(const R& record) {
  std::vector<Scalar> scalars;
  R::for_each_field(record, [&scalars](const FieldInfo& f, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    if (f.tag.empty()) return;
    if constexpr (record_detail::Optional<T>::value) {
      static_assert(std::is_arithmetic_v<typename T::value_type>, "a tagged field is a number");
      if (value && std::isfinite(static_cast<double>(*value))) {
        scalars.push_back({f.tag, static_cast<double>(*value)});
      }
    } else if constexpr (std::is_arithmetic_v<T>) {
      if (std::isfinite(static_cast<double>(value))) {
        scalars.push_back({f.tag, static_cast<double>(value)});
      }
    }
  });
  return scalars;
}

}  // namespace conflux::telemetry
