// `conflux plan`: the cheapest configuration that meets a deadline (docs/planning.md).

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "command.hpp"
#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/plan/cost_model.hpp"
#include "conflux/plan/plan_output.hpp"
#include "conflux/plan/planner.hpp"
#include "conflux/plan/s3_transfer.hpp"
#include "plan_options.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

// `conflux plan`'s command line.
struct PlanArgs {
  std::string model_path, target = "lambda", arch = "x86", batches, threads, s3_dir;
  std::string emit_config, emit_sbatch;
  std::string margin = "auto";
  std::string lr_scaling = "linear";
  std::string reference;
  double deadline = 0, target_accuracy = 0, target_loss = 0;
  int epochs = 0, alternatives = 5;
  bool all_points = false;
  plan::PlanSpace space{.max_data_workers = -1};  // -1: by the model (see --max-data-workers)
  ConfigOption config_option;
};

// Parses and checks the options; false after --help.
bool parse_plan_args(const Invocation& inv, PlanArgs& a) {
  po::options_description options("conflux plan options");
  options.add_options()("help,h", "show this help")("model,m", po::value(&a.model_path)->required(),
                                                    "model file from `conflux fit`")(
      "deadline,d", po::value(&a.deadline)->required(), "seconds the whole training may take")(
      "margin", po::value(&a.margin),
      "time kept in reserve, a fraction of the predicted time (e.g. 0.1); auto (default): the "
      "90th percentile of the fit's leave-one-out T_train errors")(
      "target", po::value(&a.target),
      "lambda (default: K-Reduce over S3) or slurm (MPI allreduce)")(
      "arch", po::value(&a.arch), "Lambda architecture: x86 (default) or arm")(
      "epochs", po::value(&a.epochs),
      "epochs to train (default: train.epochs of the config); a fixed amount of work, which "
      "ignores that larger batches need more epochs for the same accuracy")(
      "target-accuracy", po::value(&a.target_accuracy),
      "plan the steps each global batch needs to reach this test accuracy (with --reference)")(
      "target-loss", po::value(&a.target_loss),
      "plan the steps each global batch needs to reach this training loss (with --reference)")(
      "reference", po::value(&a.reference),
      "run directory of a `conflux train` run with train.noise_scale = true on 2+ trainers: its "
      "steps to the target and its gradient noise scale give S(B) = S_min (1 + B_noise / B)")(
      "max-workers", po::value(&a.space.max_workers), "largest W (default 64)")(
      "max-data-workers", po::value(&a.space.max_data_workers),
      "largest number D of data-service (preprocessing) ranks, each of cluster.worker_threads "
      "cores (SLURM; default 8 when the model prices the input pipeline, else 0)")(
      "min-memory", po::value(&a.space.min_memory_mb), "smallest M in MB (default 128)")(
      "max-memory", po::value(&a.space.max_memory_mb), "largest M in MB (default 10240)")(
      "memory-step", po::value(&a.space.memory_step_mb), "M grid step in MB (default 1)")(
      "batches", po::value(&a.batches), "per-worker batch sizes (default 16,32,...,1024)")(
      "threads", po::value(&a.threads),
      "BLAS thread counts to choose from, each profiled (default: those the profile measured; "
      "a model of an older profile: cluster.blas_threads)")(
      "max-global-batch", po::value(&a.space.max_global_batch),
      "largest global batch K Ba + (W - K) Bn (default: no cap; FasDL: 1024)")(
      "aggregator-batch", po::value(&a.space.aggregator_batch),
      "fix every aggregator's batch Ba to this (default: any of --batches)")(
      "nonaggregator-batch-ratio", po::value(&a.space.nonaggregator_batch_ratio),
      "Bn = this x Ba (1: every worker the same batch; default: any Bn >= Ba of --batches)")(
      "lr-scaling", po::value(&a.lr_scaling),
      "the emitted config's learning rate for the planned global batch: linear (default; "
      "lr x B / B0, one epoch of warm-up when it grows), sqrt (lr x sqrt(B / B0)) or none")(
      "alternatives", po::value(&a.alternatives), "runners-up to show (default 5)")(
      "all-points", po::bool_switch(&a.all_points), "rank all points, not distinct (W, K, Ba, Bn)")(
      "s3-table", po::value(&a.s3_dir),
      "folder of the measured Lambda-S3 transfer tables (default: the ones installed with conflux, "
      "share/conflux/lambda-s3-transfer)")("emit-config", po::value(&a.emit_config),
                                           "write the chosen configuration as TOML here")(
      "emit-sbatch", po::value(&a.emit_sbatch), "write an #SBATCH header for it here");
  a.config_option.add_to(options);
  if (!parse_options(inv, options)) return false;
  CONFLUX_REQUIRE(a.target == "lambda" || a.target == "slurm",
                  "--target must be lambda or slurm, not '{}'", a.target);
  CONFLUX_REQUIRE(a.arch == "x86" || a.arch == "arm", "--arch must be x86 or arm, not '{}'",
                  a.arch);
  CONFLUX_REQUIRE(a.lr_scaling == "linear" || a.lr_scaling == "sqrt" || a.lr_scaling == "none",
                  "--lr-scaling must be linear, sqrt or none, not '{}'", a.lr_scaling);
  if (!a.batches.empty()) a.space.batch_sizes = int_list(a.batches, "batches");
  if (!a.threads.empty()) a.space.thread_counts = int_list(a.threads, "threads");
  const bool target = a.target_accuracy != 0 || a.target_loss != 0;
  CONFLUX_REQUIRE(a.target_accuracy == 0 || a.target_loss == 0,
                  "give --target-accuracy or --target-loss, not both");
  CONFLUX_REQUIRE(!target || a.epochs == 0,
                  "--epochs fixes the work; a --target-accuracy or --target-loss derives it: give "
                  "one of them");
  CONFLUX_REQUIRE(!target || !a.reference.empty(),
                  "--target-accuracy and --target-loss need --reference RUN_DIR: a run with "
                  "train.noise_scale = true on 2 or more trainers (the noise scale and the steps "
                  "to the target come from it)");
  CONFLUX_REQUIRE(target || a.reference.empty(),
                  "--reference needs --target-accuracy or --target-loss");
  return true;
}

// The margin --margin asks for, said on stdout with the deadline it leaves to plan against.
plan::DeadlineMargin deadline_margin(const PlanArgs& a, const plan::PerformanceModel& model) {
  plan::DeadlineMargin m;
  if (a.margin == "auto") {
    m = plan::margin_from_held_out(model.train_loo_errors);
    if (m.points == 0) {
      fmt::print(
          "margin 0 %: {} holds no held-out errors (a fit file of an older conflux fit); "
          "refit, or give --margin\n",
          a.model_path);
      return m;
    }
  } else {
    char* end = nullptr;
    m.fraction = std::strtod(a.margin.c_str(), &end);
    CONFLUX_REQUIRE(
        !a.margin.empty() && *end == '\0' && std::isfinite(m.fraction) && m.fraction >= 0,
        "--margin must be auto or a fraction >= 0 (e.g. 0.1), not '{}'", a.margin);
  }
  fmt::print("margin {:.1f} % ({}): the predicted time must stay within deadline / {:.3f}\n",
             100 * m.fraction,
             m.points > 0
                 ? fmt::format("90th percentile of the fit's {} held-out T_train errors", m.points)
                 : std::string("--margin"),
             1 + m.fraction);
  return m;
}

// Writes the files --emit-config and --emit-sbatch ask for.
void emit_plan_files(const PlanArgs& a, const plan::PlanResult& result, const plan::CostModel& cost,
                     const Config& config) {
  const auto& [best, prediction] = result.ranked.front();
  if (!a.emit_config.empty()) {
    const plan::LrScaling scaling = a.lr_scaling == "linear" ? plan::LrScaling::kLinear
                                    : a.lr_scaling == "sqrt" ? plan::LrScaling::kSqrt
                                                             : plan::LrScaling::kNone;
    const std::int64_t batch =
        static_cast<std::int64_t>(plan::CostModel::samples_per_iteration(best));
    std::vector<Setting> lr =
        plan::scaled_lr_settings(config, batch, scaling, cost.model().epoch_samples);
    fmt::print(
        "learning rate for the global batch {} (config: {}): {}\n", batch,
        config.train().batch_size,
        lr.empty()
            ? fmt::format("{:g}, unchanged (--lr-scaling {})", config.train().lr, a.lr_scaling)
            : fmt::format("{:g} -> {:g} (--lr-scaling {}){}", config.train().lr,
                          std::get<double>(lr.front().value), a.lr_scaling,
                          lr.size() > 1 ? fmt::format(", warm-up {} steps",
                                                      std::get<std::int64_t>(lr.back().value))
                                        : std::string()));
    if (cost.options().to_target != nullptr) {
      lr.push_back(
          {.key = "train.epochs",
           .value = plan::epochs_covering(prediction.iterations, cost.model().epoch_samples,
                                          static_cast<std::uint64_t>(batch))});
      fmt::print("epochs for {} steps of {} samples to {}: {}\n", prediction.iterations, batch,
                 cost.options().to_target->target.describe(),
                 std::get<std::int64_t>(lr.back().value));
    }
    // The user's config (with its --set overrides) with the chosen keys set: ready to run.
    publish_text_file(a.emit_config, plan::emit_config(best, cost.options().target, config, lr,
                                                       prediction.offload_ratio));
    fmt::print("configuration written to {}\n", a.emit_config);
  }
  if (!a.emit_sbatch.empty()) {
    publish_text_file(a.emit_sbatch, plan::emit_sbatch_header(
                                         best, prediction.total_s, config.run().name,
                                         cost.model().mb_per_vcpu, cost.options().worker_threads));
    fmt::print("#SBATCH header written to {}\n", a.emit_sbatch);
  }
}

int run_plan(const Invocation& inv) {
  PlanArgs a;
  if (!parse_plan_args(inv, a)) return 0;
  const Config config = a.config_option.load();
  const plan::PerformanceModel model = model_for(config, a.model_path);
  std::optional<plan::S3TransferTable> s3;
  if (a.target == "lambda") {
    s3 = plan::S3TransferTable::load(a.s3_dir.empty() ? plan::S3TransferTable::installed_dir()
                                                      : std::filesystem::path(a.s3_dir));
  }
  std::optional<plan::StepsToTarget> to_target;
  if (!a.reference.empty()) {
    const plan::TrainingTarget target =
        a.target_loss != 0 ? plan::TrainingTarget{.kind = plan::TrainingTarget::Kind::kTrainingLoss,
                                                  .value = a.target_loss}
                           : plan::TrainingTarget{.kind = plan::TrainingTarget::Kind::kTestAccuracy,
                                                  .value = a.target_accuracy};
    to_target = plan::steps_to_target_from_run(a.reference, target);
  }
  const plan::CostModel cost(plan::CostModelOptions{
      .model = &model,
      .prices = config.prices(),
      .target = a.target == "lambda" ? plan::Target::kLambda : plan::Target::kSlurm,
      .arch = a.arch == "arm" ? plan::LambdaArch::kArm : plan::LambdaArch::kX86,
      .epochs = a.epochs > 0 ? a.epochs : config.train().epochs,
      .to_target = to_target ? &*to_target : nullptr,
      .threads = config.cluster().blas_threads,
      .worker_threads = config.cluster().worker_threads,
      .s3 = s3 ? &*s3 : nullptr});
  CONFLUX_REQUIRE(a.space.max_data_workers >= -1, "--max-data-workers must be >= 0, got {}",
                  a.space.max_data_workers);
  if (a.space.max_data_workers < 0) {
    a.space.max_data_workers = a.target == "slurm" && model.prices_input() ? 8 : 0;
  }
  // The thread counts the profile measured (the plan chooses among them and sets
  // cluster.blas_threads); a model of an older profile: the config's count, capped.
  if (a.space.thread_counts.empty()) a.space.thread_counts = model.measured_threads();
  const plan::DeadlineMargin margin = deadline_margin(a, model);
  const plan::PlanRequest request{.deadline_s = a.deadline,
                                  .margin = margin.fraction,
                                  .alternatives = a.alternatives,
                                  .space = a.space,
                                  .distinct = !a.all_points};
  const plan::PlanResult result = plan::plan(cost, request);
  if (!result.feasible) {
    std::cout << plan::render_infeasible(result, request) << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  }
  std::cout << plan::render_plan_report(result, cost, request);
  emit_plan_files(a, result, cost, config);
  return 0;
}

}  // namespace

const Command& plan_command() {
  static const Command command{
      .name = "plan",
      .usage = "conflux plan --model MODEL.toml --config FILE --deadline S",
      .summary = "cheapest config meeting S seconds",
      .help =
          "Searches trainer counts, function sizes, batches and thread counts (and data "
          "workers on SLURM) for the cheapest configuration whose predicted training time, "
          "with a margin for the model's errors, meets the deadline; prints it with the "
          "runners-up and can write it as a config and an #SBATCH header. Exit 2 when no "
          "configuration meets the deadline. docs/planning.md.",
      .run = run_plan};
  return command;
}

}  // namespace conflux::cli
