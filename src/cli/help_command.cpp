// `conflux help`: the overview of every command, generated from the registrations, or one
// command's help.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "command.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"

namespace conflux::cli {
namespace {

// What holds for every command; the exit codes and the data directory stay on the first screen.
constexpr const char* kNotes = R"(
Ranks 0..trainers-1 train ([cluster] trainers in the config); the others are preprocessing
workers. Launch train and profile with mpirun -np N or srun -n N. SIGUSR1, SIGTERM or SIGINT
make `train` checkpoint at the next step and exit 75.
Exit codes: 0 success, 2 bad input (config, command line, data files, corrupt checkpoint),
3 runtime failure, 4 run directory in use by another job, 75 checkpointed on a signal
(requeue me).
Data: data.dir, else $CONFLUX_DATA, else )" CONFLUX_USER_DATA_DIR R"(.
)";

// Every command and action, one per line ("data convert"), for scripts and the CLI tests.
void list_commands(const std::vector<const Command*>& list, const std::string& prefix) {
  for (const Command* c : list) {
    fmt::print("{}{}\n", prefix, c->name);
    list_commands(c->actions, fmt::format("{}{} ", prefix, c->name));
  }
}

int run_help(const Invocation& inv) {
  const std::vector<std::string>& args = inv.args;
  if (args.size() == 1 && args[0] == "--commands") {
    list_commands(commands(), "");
    return 0;
  }
  if (args.empty()) {
    std::cout << overview();
    return 0;
  }
  if (asks_help(args)) {
    std::cout << command_help(inv.command);
    return 0;
  }
  const Command* command = find_command(args);
  if (command == nullptr) {
    CONFLUX_INPUT_ERROR("unknown command '{}'; run 'conflux help'", fmt::join(args, " "));
  }
  // The command's own --help, which lists its options.
  const Invocation asked{*command, {"--help"}, inv.argc, inv.argv};
  return command->run != nullptr ? command->run(asked) : dispatch_group(asked);
}

}  // namespace

std::string overview() {
  std::string out = "conflux: distributed training with an integrated data service\n\nUsage:\n";
  for (const Command* c : commands()) out += usage_entry(*c);
  return out + kNotes;
}

const Command& help_command() {
  static const Command command{
      .name = "help",
      .usage = "conflux help [COMMAND [ACTION] | --commands] | --help",
      .summary = "this page, or a command's help",
      .help =
          "Every command takes --help. Without a command: every command's usage line and the exit "
          "codes. With one: its "
          "help, as `conflux COMMAND --help` prints it. --commands: every command and action, "
          "one per line.",
      .run = run_help,
      .aliases = {"--help", "-h"}};
  return command;
}

}  // namespace conflux::cli
