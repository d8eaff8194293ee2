#pragma once
// Config values between their two forms: TOML nodes (as files, overrides and the resolved
// config hold them) and KeyValues (as the typed sections and code hold them), and the check of
// a node against its key's spec. Private to src/config.

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <string_view>

#include "conflux/config/config.hpp"
#include "conflux/config/schema.hpp"

namespace conflux {

/// InputError "`where`: `label`: expected ..., got ..." unless `node` has the type of `spec`,
/// lies in its range and is one of its choices.
void check_value(const toml::node& node, const KeySpec& spec, std::string_view label,
                 std::string_view where);

/// The value of a checked node as a key of type `type` holds it (numbers become doubles for
/// number keys).
KeyValue to_key_value(const toml::node& node, ValueType type);

/// Says whether a number is written as an integer: index -1 is a scalar, else a list entry.
using IntegerSpelling = std::function<bool(int index)>;

/// Inserts `value` as `name` into `table`; doubles for which `spelled_int` holds are written as
/// integers (600 rather than 600.0), as they were given.
void insert_value(toml::table& table, std::string_view name, const KeyValue& value,
                  const IntegerSpelling& spelled_int);

/// A node as TOML text: `'mnist'`, `0.5`, `[ 1, 2 ]`.
std::string node_text(const toml::node& node);

}  // namespace conflux
