#include "conflux/config/environment.hpp"

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace conflux {

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string environment_data_dir() {
  if (std::string dir = env_or_empty("CONFLUX_DATA"); !dir.empty()) return dir;
  // XDG base directories: a relative $XDG_DATA_HOME is invalid and must be ignored.
  if (const std::filesystem::path xdg = env_or_empty("XDG_DATA_HOME"); xdg.is_absolute())
    return (xdg / "conflux" / "data").string();
  if (const std::filesystem::path home = env_or_empty("HOME"); home.is_absolute())
    return (home / ".local" / "share" / "conflux" / "data").string();
  return {};
}

ConfigSources environment_sources(std::vector<std::string> overrides, std::string launch_time) {
  return ConfigSources{std::move(overrides), environment_data_dir(), std::move(launch_time)};
}

}  // namespace conflux
