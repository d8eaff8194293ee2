#pragma once
// `conflux report RUN_DIR [--output DIR]`: the run's HTML summary with its plots.

#include <string>
#include <vector>

namespace conflux::cli {

/// Parses the arguments, writes the report and prints the page's path; 0, or an Error.
int cmd_report(const std::vector<std::string>& args);

}  // namespace conflux::cli
