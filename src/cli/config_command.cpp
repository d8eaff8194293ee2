// `conflux config`: check a config (`check`) and list every key (`reference`).

#include <iostream>

#include "command.hpp"
#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/config/schema.hpp"
#include "conflux/core/log.hpp"
#include "conflux/train/model_budget.hpp"
#include "mpi_command.hpp"

namespace conflux::cli {
namespace {

int run_check(const Invocation& inv) {
  const std::optional<ConfigArgs> args = parse_config_args(inv);
  if (!args) return 0;
  const Config config = load_config_file(
      args->path, environment_sources(args->overrides, local_time("%Y%m%d-%H%M%S")));
  // What train would find only at start-up: a model that does not fit the data or memory.
  train::check_model_memory(config, train::expected_model_input(config));
  std::cout << config.resolved_toml();
  return 0;
}

int run_reference(const Invocation& inv) {
  if (!operands(inv, 0, 0)) return 0;
  std::cout << config_reference_markdown();
  return 0;
}

}  // namespace

const Command& config_command() {
  static const Command check{
      .name = "check",
      .usage = "conflux config check --config FILE [--set KEY=VALUE]...",
      .summary = "validate; print the resolved config",
      .help =
          "Loads the config as train would (the file, --set, the environment), checks every "
          "key and that the model fits the data and the memory limit, and prints the "
          "resolved config as TOML. Exit 2 naming the file, line and key of an error.",
      .run = run_check};
  static const Command reference{.name = "reference",
                                 .usage = "conflux config reference",
                                 .summary = "every config key, as Markdown",
                                 .help =
                                     "Prints every config key with its type, default, range "
                                     "and documentation: the source of docs/config.md "
                                     "(`make docs`).",
                                 .run = run_reference};
  static const Command group{
      .name = "config", .usage = "", .summary = "", .help = "", .actions = {&check, &reference}};
  return group;
}

}  // namespace conflux::cli
