// `conflux eval`: loss and accuracy of saved weights on the config's dataset.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "command.hpp"
#include "conflux/core/error.hpp"
#include "conflux/train/evaluation.hpp"
#include "mpi_command.hpp"
#include "weights_options.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

int run_eval(const Invocation& inv) {
  WeightsOptions weights;
  std::string split = "test";
  po::options_description options("conflux eval options");
  options.add_options()("help,h", "show this help");
  add_weights_options(options, weights);
  options.add_options()("split", po::value(&split), "test (default) or train");
  if (!parse_options(inv, options)) return 0;
  CONFLUX_REQUIRE(split == "test" || split == "train",
                  "conflux eval: --split must be test or train, not '{}'", split);
  const train::EvalJob eval{.model_file = weights.model_file, .train_split = split == "train"};
  return run_mpi_command(inv, {weights.config_path, weights.overrides}, [&](const MpiJob& job) {
    const train::EvalResult r = train::run_eval_job(job.config, job.world, job.log, eval);
    if (job.world.rank() == 0) {
      fmt::print("eval: {} split, {} samples: loss {:.4f}, accuracy {:.2f}%\n", split, r.samples,
                 r.loss, 100.0 * r.accuracy);
    }
    return 0;
  });
}

}  // namespace

const Command& eval_command() {
  static const Command command{
      .name = "eval",
      .usage =
          "[mpirun -np N] conflux eval --model FILE.h5 --config FILE [--set KEY=VALUE]... "
          "[--split S]",
      .summary = "loss and accuracy of saved weights on the config's dataset",
      .help =
          "Builds the config's model, loads the weights (strictly: every tensor, with its "
          "shape) and evaluates them with the config's evaluation transform and "
          "data.test_limit, reporting what training reports after an epoch. Under mpirun each "
          "rank evaluates a shard. docs/training.md, \"Weights in and out\".",
      .run = run_eval};
  return command;
}

}  // namespace conflux::cli
