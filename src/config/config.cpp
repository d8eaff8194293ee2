#include "conflux/config/config.hpp"

#include "config_builder.hpp"
#include "conflux/core/error.hpp"

namespace conflux {

std::string Config::where(const std::string& key_path) const {
  auto it = locations_.find(key_path);
  return it == locations_.end() ? std::string("default") : it->second;
}

int Config::workers_for(int world_size) const {
  const int trainers = cluster().trainers;
  CONFLUX_REQUIRE(world_size >= trainers,
                  "{}: cluster.trainers = {} needs at least {} ranks, but the job has {} "
                  "(mpirun -np / srun -n)",
                  where("cluster.trainers"), trainers, trainers, world_size);
  const int workers = world_size - trainers;
  CONFLUX_REQUIRE(cluster().workers < 0 || cluster().workers == workers,
                  "{}: cluster.trainers = {} and cluster.workers = {} need {} ranks, but the "
                  "job has {} (mpirun -np / srun -n)",
                  where("cluster.workers"), trainers, cluster().workers,
                  trainers + cluster().workers, world_size);
  return workers;
}

Config Config::with(const std::vector<Setting>& settings, std::string_view origin) const {
  ConfigBuilder builder(*this);
  for (const Setting& setting : settings) builder.set(setting, origin);
  return builder.finish();
}

}  // namespace conflux
