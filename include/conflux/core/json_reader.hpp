#pragma once
/// @file json_reader.hpp
/// Reading the JSON conflux itself writes (metrics and profile lines, summaries, timelines):
/// a small strict parser into a value tree, and a streaming scan of one array member for files
/// too large to hold as a tree (a timeline of a million events). Syntax errors name the source,
/// line and column; input that ends early (a file still being written, or cut by a kill) is
/// told apart from malformed input.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "conflux/core/error.hpp"

namespace conflux {

/// A parsed JSON value: null, boolean, number, string, array or object. Object members keep
/// their order; lookups are linear (the objects conflux writes are small).
class JsonValue {
 public:
  /// An array's elements.
  using Array = std::vector<JsonValue>;
  /// An object's members, in file order.
  using Object = std::vector<std::pair<std::string, JsonValue>>;

  JsonValue() = default;
  /// A value holding `v`: std::nullptr_t, bool, double, std::string, Array or Object.
  template <typename T>
  requires(!std::is_same_v<std::decay_t<T>, JsonValue>) explicit JsonValue(T v)
      : value_(std::move(v)) {}

  bool is_null() const noexcept { return std::holds_alternative<std::nullptr_t>(value_); }
  bool is_bool() const noexcept { return std::holds_alternative<bool>(value_); }
  bool is_number() const noexcept { return std::holds_alternative<double>(value_); }
  bool is_string() const noexcept { return std::holds_alternative<std::string>(value_); }
  bool is_array() const noexcept { return std::holds_alternative<Array>(value_); }
  bool is_object() const noexcept { return std::holds_alternative<Object>(value_); }

  /// The boolean; RuntimeError when the value is not one (check is_bool() on input).
  bool as_bool() const;
  /// The number; RuntimeError when the value is not one.
  double as_number() const;
  /// The string; RuntimeError when the value is not one.
  const std::string& as_string() const;
  /// The elements; RuntimeError when the value is not an array.
  const Array& as_array() const;
  /// The members; RuntimeError when the value is not an object.
  const Object& as_object() const;

  /// The member `key` of an object, or nullptr when absent or when this is not an object.
  const JsonValue* find(std::string_view key) const noexcept;
  /// The number at `key`; `fallback` when absent, null or not a number (JSON has no NaN, so
  /// conflux writes null for it).
  double number_or(std::string_view key, double fallback) const noexcept;
  /// The string at `key`; `fallback` when absent or not a string.
  std::string string_or(std::string_view key, std::string fallback) const;

  /// "null", "a boolean", "a number", "a string", "an array" or "an object".
  std::string_view type_name() const noexcept;

 private:
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value_{nullptr};
};

/// A JSON syntax error: InputError (exit 2) whose message names the source, line and column.
/// truncated() tells input that ended inside a value from malformed input.
class JsonSyntaxError : public InputError {
 public:
  JsonSyntaxError(std::string message, bool truncated, const char* file, int line)
      : InputError(std::move(message), file, line), truncated_(truncated) {}
  /// The input ended before the value was complete.
  bool truncated() const noexcept { return truncated_; }

 private:
  bool truncated_;
};

/// Parses `text`, one JSON value with nothing but white space after it. `source` names the
/// input in errors ("run/metrics.jsonl:3"); line and column are counted within `text`.
/// JsonSyntaxError on malformed or truncated input.
JsonValue parse_json(std::string_view text, std::string_view source);

/// Streams the array member `key` of the top-level object in `text`: calls `on_element` for
/// each element as it is parsed, without building the array (other members are parsed and
/// dropped). A top-level array is streamed as if it were that member (Chrome's "JSON Array
/// Format"). Returns the number of elements. JsonSyntaxError as parse_json(); when the text
/// is truncated, the elements before the cut have been delivered.
std::size_t scan_json_array(std::string_view text, std::string_view key, std::string_view source,
                            const std::function<void(JsonValue&&)>& on_element);

}  // namespace conflux
