#pragma once
/// @file environment.hpp
/// The one reader of the process environment for configuration (docs/design.md, "Data
/// directory"): `conflux` (src/cli/main.cpp) and `conflux-bench` build their ConfigSources
/// here, so both find the data the same way. Nothing else reads $CONFLUX_DATA, $XDG_DATA_HOME
/// or $HOME.

#include <string>
#include <vector>

#include "conflux/config/config.hpp"

namespace conflux {

/// The data directory the environment gives: $CONFLUX_DATA when set and not empty, else the
/// per-user default CONFLUX_USER_DATA_DIR ($XDG_DATA_HOME/conflux/data when $XDG_DATA_HOME is
/// an absolute path, as the XDG base directory specification asks, else
/// $HOME/.local/share/conflux/data). Empty when none of them is usable. Never relative to the
/// working directory unless $CONFLUX_DATA itself is relative (then the user asked for it).
std::string environment_data_dir();

/// ConfigSources with `overrides`, `launch_time` and environment_data_dir().
ConfigSources environment_sources(std::vector<std::string> overrides, std::string launch_time);

}  // namespace conflux
