#pragma once
/// @file data_dir.hpp
/// Where tests find the real datasets: where conflux finds them ($CONFLUX_DATA, else the
/// per-user default; tests/run-all.sh sets $CONFLUX_DATA to ../shared/data in the CI layout).

#include <filesystem>

#include "conflux/config/environment.hpp"

namespace conflux::testing {

/// Directory holding mnist/, fashion-mnist/ and cifar-10/.
inline std::filesystem::path data_dir() {
  return environment_data_dir();
}

}  // namespace conflux::testing
