#pragma once
// The options of the commands that work on a run's saved weights (`eval`, `export`): the
// weights, and the config that says what network they are.
#include <boost/program_options.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace conflux::cli {

/// --model, --config and --set of a command on saved weights.
struct WeightsOptions {
  std::filesystem::path model_file;    ///< weights saved by a run (its model.h5)
  std::string config_path;             ///< the config of those weights
  std::vector<std::string> overrides;  ///< --set KEY=VALUE
};

/// Adds --model (-m), --config (-c) and --set (-s), bound to `out`, to `options`.
inline void add_weights_options(boost::program_options::options_description& options,
                                WeightsOptions& out) {
  namespace po = boost::program_options;
  options.add_options()("model,m", po::value(&out.model_file)->required(),
                        "weights saved by a run (its model.h5)")(
      "config,c", po::value(&out.config_path)->required(),
      "TOML experiment config of those weights (e.g. the run's config.toml): the layers, the "
      "dataset and its evaluation transform")(
      "set,s", po::value(&out.overrides)->composing(),
      "override a config key, e.g. --set data.test_limit=1000 (repeatable)");
}

}  // namespace conflux::cli
