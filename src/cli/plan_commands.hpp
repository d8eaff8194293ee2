#pragma once
// The cost-model commands of the conflux CLI: profile (MPI), fit, predict and plan.

#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::cli {

/// Options of `conflux profile` besides the config.
struct ProfileArgs {
  std::string config;                  ///< --config
  std::vector<std::string> overrides;  ///< --set KEY=VALUE, in order
  std::vector<int> workers, memory_mb, batches;
  std::vector<int> threads;  ///< --threads; empty: cluster.blas_threads
  int steps = 20, warmup = 5;
  double min_seconds = 1.0;
  std::string output;
};

/// Parses `conflux profile` options, the config file and its overrides included.
ProfileArgs parse_profile_args(const std::vector<std::string>& args);
/// Runs the sweep on every rank and writes the profile on rank 0.
int run_profile(const ProfileArgs& args, const Config& config, const comm::Communicator& world,
                const Logger& log);
/// `conflux fit --profile FILE... --output MODEL.toml [--form auto|fasdl|constant]`.
int cmd_fit(const std::vector<std::string>& args);
/// `conflux predict --model MODEL.toml --config FILE [--set K=V]...`.
int cmd_predict(const std::vector<std::string>& args, const ConfigSources& base_sources);
/// `conflux plan --model MODEL.toml --config FILE --deadline SECONDS ...`.
int cmd_plan(const std::vector<std::string>& args, const ConfigSources& base_sources);

}  // namespace conflux::cli
