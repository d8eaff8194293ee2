#include "trainer_configs.hpp"

#include <fmt/format.h>

#include "conflux/config/environment.hpp"

namespace conflux::bench {

Config load_trainers_only(const TrainersOnlyConfig& c, const std::vector<std::string>& variant) {
  ConfigSources sources = environment_sources(c.overrides, "bench");  // data as conflux finds it
  sources.overrides.push_back(fmt::format("cluster.trainers={}", c.trainers));
  sources.overrides.push_back("cluster.workers=0");
  sources.overrides.push_back("train.eval=false");
  sources.overrides.push_back("train.log_every=0");
  sources.overrides.push_back(fmt::format("run.dir=\"{}\"", c.dir));
  sources.overrides.insert(sources.overrides.end(), variant.begin(), variant.end());
  return load_config_file(c.path, sources);
}

}  // namespace conflux::bench
