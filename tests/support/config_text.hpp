#pragma once
/// @file config_text.hpp
/// Test helpers: the smallest valid config, for tests that add their own tables, and loading
/// a config text with --set overrides.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conflux/config/config.hpp"
#include "conflux/core/error.hpp"

namespace conflux::testing {

/// MNIST from /data into flatten + linear(10); append other tables (each table only once).
inline constexpr const char* kMinimalConfig = R"(
[data]
dataset = "mnist"
dir = "/data"
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = 10
)";

/// `text` loaded as the file `name` with `overrides` given as --set values.
inline Config load_with(std::string_view text, std::vector<std::string> overrides,
                        std::string_view name = "test.toml") {
  return load_config_string(text, name, ConfigSources{std::move(overrides), "", "20260101-000000"});
}

/// The InputError message of load_with(), or "(accepted)".
inline std::string load_error(std::string_view text, std::vector<std::string> overrides,
                              std::string_view name = "test.toml") {
  try {
    load_with(text, std::move(overrides), name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace conflux::testing
