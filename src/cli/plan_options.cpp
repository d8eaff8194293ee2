#include "plan_options.hpp"

#include <sstream>
#include <stdexcept>

#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/log.hpp"
#include "conflux/plan/fit_file.hpp"

namespace po = boost::program_options;

namespace conflux::cli {

std::vector<int> int_list(const std::string& text, const char* option) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      CONFLUX_INPUT_ERROR("--{}: '{}' is not an integer (expected a list such as 1,2,4)", option,
                          item);
    }
  }
  CONFLUX_REQUIRE(!out.empty(), "--{}: empty list", option);
  return out;
}

void ConfigOption::add_to(po::options_description& options) {
  options.add_options()("config,c", po::value(&path)->required(), "TOML experiment config")(
      "set,s", po::value(&overrides)->composing(), "override a config key (repeatable)");
}

Config ConfigOption::load() const {
  return load_config_file(path, environment_sources(overrides, local_time("%Y%m%d-%H%M%S")));
}

plan::PerformanceModel model_for(const Config& config, const std::string& path) {
  plan::PerformanceModel model = plan::read_fit_file(path);
  CONFLUX_REQUIRE(model.dataset == config.data().dataset,
                  "{} was fitted on {} but the config trains on {}", path, model.dataset,
                  config.data().dataset);
  const auto limit = static_cast<std::uint64_t>(config.data().train_limit);
  if (limit > 0 && limit < model.epoch_samples) model.epoch_samples = limit;
  return model;
}

}  // namespace conflux::cli
