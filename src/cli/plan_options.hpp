#pragma once
/// @file plan_options.hpp
/// What the cost-model commands (profile, predict, plan) share: integer-list options, the
/// config option, and the fitted model checked against a config.

#include <boost/program_options.hpp>

#include <string>
#include <vector>

#include "conflux/config/config.hpp"
#include "conflux/plan/performance_model.hpp"

namespace conflux::cli {

/// "1,2,4" -> {1, 2, 4}; an InputError naming --`option` otherwise.
std::vector<int> int_list(const std::string& text, const char* option);

/// The config file and its --set overrides.
struct ConfigOption {
  std::string path;                    ///< --config
  std::vector<std::string> overrides;  ///< --set KEY=VALUE, in order
  /// Adds --config (-c) and --set (-s), bound to this, to `options`.
  void add_to(boost::program_options::options_description& options);
  /// The config, with the environment's sources (data directory, launch time, BLAS pin).
  Config load() const;
};

/// The fitted model in `path` for `config`: the same dataset; its epoch shortened by
/// data.train_limit.
plan::PerformanceModel model_for(const Config& config, const std::string& path);

}  // namespace conflux::cli
