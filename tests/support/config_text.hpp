#pragma once
/// @file config_text.hpp
/// Test helper: the smallest valid config, for tests that add their own tables.

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

}  // namespace conflux::testing
