#pragma once
/// @file data_dir.hpp
/// Where tests find the real datasets: $CONFLUX_DATA, else ../shared/data (CI layout).

#include <cstdlib>
#include <filesystem>

namespace conflux::testing {

/// Directory holding mnist/, fashion-mnist/ and cifar-10/.
inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("CONFLUX_DATA"); env && *env) return env;
  return std::filesystem::path("..") / "shared" / "data";
}

}  // namespace conflux::testing
