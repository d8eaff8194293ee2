#pragma once
/// @file identity.hpp
/// What of a config must be the same on every rank of a job.

#include <string>
#include <utility>
#include <vector>

#include "conflux/config/config.hpp"

namespace conflux {

/// The config's values every rank of a job must share, as (key, value text) pairs: every key
/// except the paths a node may spell its own way (data.dir, data.hdf5_file, transform.plugin:
/// the data's contents are compared separately), then "model.layers".
std::vector<std::pair<std::string, std::string>> rank_invariant_values(const Config& config);

}  // namespace conflux
