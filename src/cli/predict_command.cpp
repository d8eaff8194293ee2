// `conflux predict`: a config's epoch time as the fitted model predicts it.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include <algorithm>

#include "command.hpp"
#include "conflux/core/error.hpp"
#include "conflux/plan/cost_model.hpp"
#include "plan_options.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

// With data workers (cluster.workers > 0 and a ratio above 0, or "auto"), the epoch with the
// config's ratio ("auto": the model's balance point) as `conflux plan` predicts it.
void print_data_worker_prediction(const Config& config, const plan::CostModel& cost,
                                  const plan::Candidate& c, const plan::Prediction& alone) {
  const int data_workers = config.cluster().workers;
  const auto& d = config.data();
  if (data_workers <= 0 || (!d.offload_auto && d.offload_ratio <= 0)) return;
  CONFLUX_REQUIRE(cost.model().prices_input(),
                  "{}: cluster.workers = {}, but the model has no input-pipeline cost (profile "
                  "and fit again to predict data workers)",
                  config.where("cluster.workers"), data_workers);
  CONFLUX_REQUIRE(d.offload_ratios.empty(),
                  "{}: predict models one offload ratio for every trainer (data.offload_ratio)",
                  config.where("data.offload_ratios"));
  const plan::CostModel::Offload split =
      d.offload_auto ? cost.offload(c.workers, data_workers, c.aggregator_batch, c.memory_mb)
                     : cost.offload_at(d.offload_ratio, c.workers, data_workers, c.aggregator_batch,
                                       c.memory_mb);
  const double step = split.seconds + alone.comm_s;
  fmt::print(
      "with {} data worker(s) at offload ratio {:.3f}{}: predicted epoch {:.3f} s ({:.3f} ms "
      "per iteration; the workers' part {:.3f} ms)\n",
      data_workers, split.ratio, d.offload_auto ? " (auto: the model's balance point)" : "",
      static_cast<double>(alone.iterations) * step, 1e3 * step, 1e3 * split.workers_s);
}

int run_predict(const Invocation& inv) {
  std::string model_path;
  ConfigOption config_option;
  po::options_description options("conflux predict options");
  options.add_options()("help,h", "show this help")("model,m", po::value(&model_path)->required(),
                                                    "model file from `conflux fit`");
  config_option.add_to(options);
  if (!parse_options(inv, options)) return 0;
  const Config config = config_option.load();
  const plan::PerformanceModel model = model_for(config, model_path);
  const int workers = config.cluster().trainers;
  const int batch = config.train().batch_size;
  CONFLUX_REQUIRE(config.limits().memory_mb > 0,
                  "{}: limits.memory_mb is 0; the model predicts for a function size (set "
                  "limits.memory_mb)",
                  config.where("limits.memory_mb"));
  CONFLUX_REQUIRE(batch % workers == 0,
                  "{}: train.batch_size = {} does not split evenly over {} trainers",
                  config.where("train.batch_size"), batch, workers);
  CONFLUX_REQUIRE(config.comm().strategy == "allreduce",
                  "{}: the model's gradient sync was measured with MPI allreduce; predict "
                  "K-Reduce with `conflux plan --target lambda`",
                  config.where("comm.strategy"));
  const std::vector<int> measured = model.measured_threads();
  const int threads = config.cluster().blas_threads;
  CONFLUX_REQUIRE(
      measured.empty() || std::find(measured.begin(), measured.end(), threads) != measured.end(),
      "{}: cluster.blas_threads = {}, but {} was profiled at {} BLAS thread(s); "
      "profile that count (conflux profile --threads)",
      config.where("cluster.blas_threads"), threads, model_path, fmt::join(measured, ", "));
  const plan::CostModel cost(plan::CostModelOptions{.model = &model,
                                                    .prices = config.prices(),
                                                    .target = plan::Target::kSlurm,
                                                    .epochs = 1,
                                                    .threads = threads});
  const plan::Candidate c{workers, config.limits().memory_mb, workers, batch / workers,
                          batch / workers};
  const plan::Prediction p = cost.predict(c);
  fmt::print(
      "predicted epoch: {:.3f} s ({} iterations x {:.3f} ms: T_train {:.3f} ms + sync {:.3f} "
      "ms) for W = {}, M = {} MB, B = {} per worker\n",
      p.total_s, p.iterations, 1e3 * p.iteration_s, 1e3 * p.train_s, 1e3 * p.comm_s, workers,
      c.memory_mb, c.aggregator_batch);
  print_data_worker_prediction(config, cost, c, p);
  return 0;
}

}  // namespace

const Command& predict_command() {
  static const Command command{
      .name = "predict",
      .usage = "conflux predict --model MODEL.toml --config FILE",
      .summary = "predicted epoch time of a config",
      .help =
          "Predicts one epoch of the config (cluster.trainers, limits.memory_mb, "
          "train.batch_size, cluster.blas_threads; with data workers, their share) on SLURM "
          "with MPI allreduce, from the model of `conflux fit`. docs/planning.md.",
      .run = run_predict};
  return command;
}

}  // namespace conflux::cli
