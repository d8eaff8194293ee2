#pragma once
// Option parsing shared by conflux's subcommands.
#include <boost/program_options.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace conflux::cli {

/// Parses `args` with `options` (which declare --help); prints the options and returns false
/// on --help, throws boost's error (exit 2 in main) on a bad or missing option.
inline bool parse_options(const std::vector<std::string>& args,
                          const boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  if (vm.count("help")) {
    std::cout << options;
    return false;
  }
  po::notify(vm);
  return true;
}

}  // namespace conflux::cli
