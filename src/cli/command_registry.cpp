// The list of `conflux` commands and the dispatch to them. Adding a command: its own file
// defining `const Command& <name>_command()` and one X(<name>) line here (docs/design.md,
// "Adding a command").

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "command.hpp"
#include "conflux/core/error.hpp"

// The order is the order of `conflux --help`.
#define CONFLUX_COMMANDS(X) \
  X(train)                  \
  X(config)                 \
  X(data)                   \
  X(ckpt)                   \
  X(profile)                \
  X(fit)                    \
  X(predict)                \
  X(plan)                   \
  X(report)                 \
  X(eval)                   \
  X(export)                 \
  X(help)                   \
  X(version)

namespace conflux::cli {

#define CONFLUX_DECLARE_COMMAND(name) const Command& name##_command();
CONFLUX_COMMANDS(CONFLUX_DECLARE_COMMAND)
#undef CONFLUX_DECLARE_COMMAND

namespace {

const Command* find_in(const std::vector<const Command*>& list, std::string_view word) {
  for (const Command* c : list) {
    if (c->name == word ||
        std::find(c->aliases.begin(), c->aliases.end(), word) != c->aliases.end()) {
      return c;
    }
  }
  return nullptr;
}

// "'a', 'b' or 'c'" (quoted) or "a, b or c".
std::string one_of(const std::vector<const Command*>& list, bool quoted) {
  std::string out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += i + 1 == list.size() ? " or " : ", ";
    out += quoted ? fmt::format("'{}'", list[i]->name) : std::string(list[i]->name);
  }
  return out;
}

int run(const Invocation& inv) {
  return inv.command.run != nullptr ? inv.command.run(inv) : dispatch_group(inv);
}

}  // namespace

const std::vector<const Command*>& commands() {
#define CONFLUX_LIST_COMMAND(name) &name##_command(),
  static const std::vector<const Command*> list{CONFLUX_COMMANDS(CONFLUX_LIST_COMMAND)};
#undef CONFLUX_LIST_COMMAND
  return list;
}

const Command* find_command(const std::vector<std::string>& path) {
  const std::vector<const Command*>* list = &commands();
  const Command* found = nullptr;
  for (const std::string& word : path) {
    found = list != nullptr ? find_in(*list, word) : nullptr;
    if (found == nullptr) return nullptr;
    list = &found->actions;
  }
  return found;
}

int dispatch_group(const Invocation& inv) {
  const Command& group = inv.command;
  const std::vector<std::string>& args = inv.args;
  if (!args.empty()) {
    if (const Command* action = find_in(group.actions, args[0])) {
      return run({*action, {args.begin() + 1, args.end()}, inv.argc, inv.argv});
    }
  }
  if (asks_help(args)) {
    std::cout << command_help(group);
    return 0;
  }
  if (args.empty())
    CONFLUX_INPUT_ERROR("conflux {}: expected {}", group.name, one_of(group.actions, true));
  CONFLUX_INPUT_ERROR("conflux {}: unknown action '{}' (expected {})", group.name, args[0],
                      one_of(group.actions, false));
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << overview();
    return static_cast<int>(ExitCode::kBadInput);
  }
  const Command* command = find_in(commands(), argv[1]);
  if (command == nullptr) CONFLUX_INPUT_ERROR("unknown command '{}'; run 'conflux help'", argv[1]);
  return run({*command, {argv + 2, argv + argc}, argc, argv});
}

}  // namespace conflux::cli
