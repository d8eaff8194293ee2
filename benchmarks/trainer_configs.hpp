#pragma once
/// @file trainer_configs.hpp
/// Configs for the A/B training scenarios (checkpoint, profiler): the same training config
/// twice, on trainer ranks only, differing in a few keys.

#include <string>
#include <vector>

#include "conflux/config/config.hpp"

namespace conflux::bench {

/// What a trainers-only benchmark config is made of.
struct TrainersOnlyConfig {
  std::string path;                    ///< the training config file
  std::vector<std::string> overrides;  ///< the user's --set values
  std::string dir;                     ///< run.dir
  int trainers = 1;                    ///< every rank trains
};

/// Loads `c.path` with every rank a trainer, no workers, no evaluation and no step logs,
/// run.dir = c.dir, then the user's overrides, then `variant` (the keys the A/B varies).
Config load_trainers_only(const TrainersOnlyConfig& c, const std::vector<std::string>& variant);

}  // namespace conflux::bench
