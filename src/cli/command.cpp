#include "command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "conflux/core/error.hpp"

namespace conflux::cli {
namespace {

constexpr std::size_t kUsageWidth = 92;     // a usage line wraps before this column
constexpr std::size_t kSummaryColumn = 61;  // where a summary starts when the usage leaves room
constexpr std::size_t kSummaryIndent = 31;  // where it starts on a line of its own
constexpr std::size_t kLineWidth = 100;

// The usage's words; a bracketed group ("[--set KEY=VALUE]...") is one word, so that a wrap
// never splits an option from its argument.
std::vector<std::string> usage_words(std::string_view usage) {
  std::vector<std::string> words(1);
  int depth = 0;
  for (const char c : usage) {
    if (c == ' ' && depth == 0) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    words.back() += c;
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

// The index of "conflux" among the usage's words, and the end of the lower-case words after
// it that name the command ("conflux data pack").
std::pair<std::size_t, std::size_t> name_words(const std::vector<std::string>& words) {
  std::size_t first = 0;
  while (first < words.size() && words[first] != "conflux") ++first;
  std::size_t end = std::min(first + 1, words.size());
  while (end < words.size() && !words[end].empty() &&
         std::all_of(words[end].begin(), words[end].end(),
                     [](char c) { return c >= 'a' && c <= 'z'; })) {
    ++end;
  }
  return {first, end};
}

// Continuation lines start under the first word after the command's name.
std::size_t continuation_column(const std::vector<std::string>& words) {
  std::size_t column = 2;
  for (std::size_t i = 0; i < name_words(words).second; ++i) column += words[i].size() + 1;
  return column;
}

// `text` filled into lines of at most kUsageWidth columns.
std::string wrapped(std::string_view text) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > kUsageWidth) {
      out += line + "\n";
      line.clear();
    }
    if (!word.empty()) {
      if (!line.empty()) line += ' ';
      line += word;
    }
    start = end + 1;
  }
  return out + line + "\n";
}

}  // namespace

std::string usage_entry(const Command& command) {
  if (command.run == nullptr) {
    std::string out;
    for (const Command* action : command.actions) out += usage_entry(*action);
    return out;
  }
  const std::vector<std::string> words = usage_words(command.usage);
  const std::size_t indent = continuation_column(words);
  std::string out, line = " ";
  for (const std::string& word : words) {
    if (line.size() > indent && line.size() + 1 + word.size() > kUsageWidth) {
      out += line + "\n";
      line = std::string(indent - 1, ' ');
    }
    line += " " + word;
  }
  if (!command.summary.empty()) {
    const std::size_t column = std::max(kSummaryColumn, line.size() + 2);
    if (column + command.summary.size() <= kLineWidth) {
      line += std::string(column - line.size(), ' ');
    } else {
      out += line + "\n";
      line = std::string(kSummaryIndent, ' ');
    }
    line += command.summary;
  }
  return out + line + "\n";
}

std::string command_help(const Command& command) {
  std::string out = "Usage:\n" + usage_entry(command);
  if (!command.help.empty()) {
    out += '\n';
    out += wrapped(command.help);
  }
  if (command.run == nullptr) {
    out += fmt::format("`conflux {} ACTION --help` describes an action and lists its options.\n",
                       command.name);
  }
  return out;
}

std::string command_words(const Command& command) {
  const std::vector<std::string> words = usage_words(command.usage);
  const auto [first, end] = name_words(words);
  std::string out;
  for (std::size_t i = first; i < end; ++i) {
    if (i > first) out += ' ';
    out += words[i];
  }
  return out;
}

bool asks_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

bool parse_options(const Invocation& inv,
                   const boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::command_line_parser(inv.args).options(options).run(), vm);
  if (vm.count("help")) {
    std::cout << command_help(inv.command) << "\n" << options;
    return false;
  }
  po::notify(vm);
  return true;
}

std::optional<std::vector<std::string>> operands(const Invocation& inv, std::size_t min,
                                                 std::size_t max) {
  if (asks_help(inv.args)) {
    std::cout << command_help(inv.command);
    return std::nullopt;
  }
  if (inv.args.size() < min || inv.args.size() > max) usage_error(inv.command);
  return inv.args;
}

void usage_error(const Command& command) {
  CONFLUX_INPUT_ERROR("usage: {}", command.usage);
}

}  // namespace conflux::cli
