// `conflux report`: the HTML summary of a run directory, with its plots.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <iostream>

#include "command.hpp"
#include "conflux/core/error.hpp"
#include "conflux/report/run_report.hpp"

namespace po = boost::program_options;

namespace conflux::cli {

namespace {

int run_report(const Invocation& inv) {
  std::string run_dir, output;
  po::options_description options("conflux report options");
  options.add_options()("help,h", "show this help")(
      "output,o", po::value(&output)->value_name("DIR"),
      "where index.html and the PNGs go (default: RUN_DIR/report)");
  po::options_description hidden;
  hidden.add_options()("run-dir", po::value(&run_dir));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(inv.args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << command_help(inv.command) << "\n" << options;
    return 0;
  }
  po::notify(vm);
  if (run_dir.empty()) usage_error(inv.command);
  const std::filesystem::path out =
      output.empty() ? std::filesystem::path(run_dir) / "report" : std::filesystem::path(output);
  fmt::print("{}\n", report::write_run_report(run_dir, out).string());
  return 0;
}

}  // namespace

const Command& report_command() {
  static const Command command{
      .name = "report",
      .usage = "conflux report RUN_DIR [--output DIR]",
      .summary = "HTML page + plots of a run",
      .help =
          "Summarises a run directory as a self-contained HTML page with PNG plots drawn by "
          "gnuplot (Debian's gnuplot-nox): loss and accuracy per step and per epoch (train and "
          "test), samples/s, data wait, the offload ratio with the controller's decisions, "
          "checkpoint stalls, and a table of the run (name, digest, final accuracy, epochs, "
          "time, trainers/workers, config). A run that is still going or was stopped gets a "
          "report of what it has written so far. Prints the page's path. See docs/report.md.",
      .run = run_report};
  return command;
}

}  // namespace conflux::cli
