#pragma once
/// @file mpi_command.hpp
/// What the commands that run on every rank of an MPI job (train, eval, profile) share: the
/// config options and the start of the job, with failures mapped to exit codes on every rank.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::cli {

/// The config file and its --set overrides.
struct ConfigArgs {
  std::string path;                    ///< --config
  std::vector<std::string> overrides;  ///< --set KEY=VALUE, in order (--resume appended)
};

/// Parses --config, --set and --resume (`train`, `config check`); nothing after --help.
std::optional<ConfigArgs> parse_config_args(const Invocation& inv);

/// What a command's body gets on each rank.
struct MpiJob {
  const Config& config;             ///< loaded on every rank and agreed
  const comm::Communicator& world;  ///< MPI_COMM_WORLD
  const Logger& log;                ///< this rank's logger
  const comm::MpiEnvironment& env;  ///< for an abort of every rank
};

/// Starts MPI, loads `config_args` on every rank, checks the ranks agree on it and runs `body`;
/// maps failures to exit codes the same way on every rank.
int run_mpi_command(const Invocation& inv, const ConfigArgs& config_args,
                    const std::function<int(const MpiJob&)>& body);

}  // namespace conflux::cli
