#pragma once
/// @file command.hpp
/// A `conflux` command, declared once: its name, its one usage line (what `conflux --help` and
/// its own --help print), its help text and its handler. A group (`data`, `config`, `ckpt`)
/// holds its actions, declared the same way. The list of commands is command_registry.cpp;
/// docs/design.md, "Adding a command", says how to add one.

#include <boost/program_options.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::cli {

struct Command;

/// One run of a command.
struct Invocation {
  const Command& command;         ///< the command (or group action) being run
  std::vector<std::string> args;  ///< the words after its name
  int argc = 0;                   ///< main's, for MPI_Init
  char** argv = nullptr;          ///< main's, for MPI_Init
};

/// A command, or a group of actions (then `run` is null and `actions` names them).
struct Command {
  std::string_view name;     ///< the word that selects it: "train", or an action's "convert"
  std::string_view usage;    ///< the one usage line, e.g. "conflux data info FILE.h5"
  std::string_view summary;  ///< what it does, in a few words, printed after the usage
  std::string_view help;     ///< what --help says between the usage and the options ("": nothing)
  int (*run)(const Invocation&) = nullptr;  ///< the handler: returns the exit code
  std::vector<const Command*> actions{};    ///< a group's actions, in the order --help lists them
  std::vector<std::string_view> aliases{};  ///< other words that select it ("--version")
};

/// The top-level commands, in the order `conflux --help` lists them.
const std::vector<const Command*>& commands();
/// Runs the command `argv` names; its exit code (errors propagate as exceptions).
int dispatch(int argc, char** argv);
/// Runs `group`'s action that `inv.args` names, or prints the group's help.
int dispatch_group(const Invocation& inv);
/// The command `path` names ("train", "data convert"), or nullptr.
const Command* find_command(const std::vector<std::string>& path);

/// `conflux --help`: every command's usage line and the program's notes (help_command.cpp).
std::string overview();
/// The command's (or group's) usage lines: the usage wrapped at word boundaries, then the
/// summary, as every help page prints them.
std::string usage_entry(const Command& command);
/// What `conflux <command> --help` prints before the options: "Usage:", the usage entry (of
/// every action for a group), and the help text.
std::string command_help(const Command& command);

/// The words of the usage that name the command: "conflux config check".
std::string command_words(const Command& command);

/// Whether `args` ask for help (--help or -h anywhere).
bool asks_help(const std::vector<std::string>& args);
/// Parses `inv.args` with `options` (which declare --help); on --help prints the command's help
/// and the options and returns false; throws boost's error (exit 2 in main) on a bad option.
bool parse_options(const Invocation& inv,
                   const boost::program_options::options_description& options);
/// The operands of a command that takes no options: on --help prints its help and returns
/// nothing; between `min` and `max` words, else an InputError quoting the usage.
std::optional<std::vector<std::string>> operands(const Invocation& inv, std::size_t min,
                                                 std::size_t max);
/// Throws an InputError "usage: <the command's usage line>".
[[noreturn]] void usage_error(const Command& command);

}  // namespace conflux::cli
