// `conflux fit`: the performance model fitted to one or more profiles (docs/planning.md, "The
// fit").

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <iostream>

#include "command.hpp"
#include "conflux/core/error.hpp"
#include "conflux/plan/fit.hpp"
#include "conflux/plan/fit_file.hpp"
#include "conflux/plan/sweep.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

int run_fit(const Invocation& inv) {
  std::vector<std::string> profiles;
  std::string output, form = "auto";
  po::options_description options("conflux fit options");
  options.add_options()("help,h", "show this help")(
      "profile,p", po::value(&profiles)->required()->composing(),
      "profile file from `conflux profile` (repeatable: merged)")(
      "output,o", po::value(&output)->required(), "model file to write (TOML)")(
      "form", po::value(&form), "T_train form: auto (default), fasdl or constant");
  if (!parse_options(inv, options)) return 0;
  CONFLUX_REQUIRE(form == "auto" || form == "fasdl" || form == "constant",
                  "--form must be auto, fasdl or constant, not '{}'", form);
  std::vector<plan::Sweep> read;
  for (const auto& p : profiles) read.push_back(plan::read_sweep(p));
  const plan::Sweep merged = plan::merge_sweeps(read, profiles);
  const plan::TrainForm train_form = form == "fasdl"      ? plan::TrainForm::kFasdl
                                     : form == "constant" ? plan::TrainForm::kConstant
                                                          : plan::TrainForm::kAuto;
  std::string source;
  for (const auto& p : profiles) source += (source.empty() ? "" : ", ") + p;
  const plan::FitResult fit = plan::fit_sweep(merged, train_form, source);
  std::cout << plan::render_fit_report(fit);
  plan::write_fit_file(output, fit.model);
  fmt::print("model written to {}\n", output);
  return 0;
}

}  // namespace

const Command& fit_command() {
  static const Command command{
      .name = "fit",
      .usage = "conflux fit --profile PROFILE.toml... --output MODEL.toml",
      .summary = "fit T_train, T_trans, sync",
      .help =
          "Fits the performance model (the step time T_train, the transfer time T_trans and "
          "the gradient sync) to the profiles of `conflux profile`, merged, prints how well "
          "it fits (with leave-one-out errors) and writes MODEL.toml for `conflux predict` "
          "and `conflux plan`. docs/planning.md, \"The fit\".",
      .run = run_fit};
  return command;
}

}  // namespace conflux::cli
