// conflux-bench planner: how fast the exact planner answers. For a fitted model (a `conflux
// fit` file, or the built-in MNIST-like one) it times plan() on the full default space (W
// 1..64, M 128..10240 MB in 1 MB steps, 7 batch sizes, K 1..W) for both targets and several
// deadlines (target: < 1 s each), and times exhaustive search against plan() on a space small
// enough to enumerate, checking that both give the same answer.

#include <fmt/format.h>

#include <chrono>

#include "conflux/core/error.hpp"
#include "conflux/plan/fit_file.hpp"
#include "conflux/plan/planner.hpp"
#include "conflux/plan/s3_transfer.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

// A model shaped like the MNIST MLP's fit on this machine (used without --model).
plan::PerformanceModel builtin_model() {
  plan::PerformanceModel m;
  m.train = {.a = 0.044, .b = 12, .m = -69, .c = 0};
  m.transfer = {.k1 = 0.28, .k2 = -0.9};
  m.sync.rows.push_back({2, {384, 768, 1152, 1536}, {0.0118, 0.0073, 0.0048, 0.0035}});
  m.gradient_mb = 0.8;
  m.epoch_samples = 60000;
  m.dataset = "mnist";
  m.source = "built-in";
  return m;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int run_planner(const std::vector<std::string>& args, const comm::Communicator& world) {
  std::string model_path, s3_dir;
  int repeats = 5, epochs = 10;
  po::options_description desc("conflux-bench planner options");
  desc.add_options()("model", po::value(&model_path),
                     "model file from `conflux fit` (default: "
                     "a built-in MNIST-like model)")(
      "s3-table", po::value(&s3_dir),
      "Lambda-S3 transfer tables (default: share/conflux/lambda-s3-transfer, as conflux plan)")(
      "repeats", po::value(&repeats)->default_value(repeats), "timed queries per case")(
      "epochs", po::value(&epochs)->default_value(epochs), "epochs of the planned job");
  CommonOptions common;
  const auto vm = parse_scenario_options("planner", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(repeats >= 1 && epochs >= 1, "--repeats and --epochs must be ≥ 1");
  if (world.rank() != 0) return 0;
  const plan::PerformanceModel model =
      model_path.empty() ? builtin_model() : plan::read_fit_file(model_path);
  const plan::S3TransferTable s3 = plan::S3TransferTable::load(
      s3_dir.empty() ? plan::S3TransferTable::installed_dir() : std::filesystem::path(s3_dir));

  Report report("planner", common);
  report.add_parameters(*vm);
  Table& full = report.add_table(
      Table("full_space", "plan() on the full default space (median of --repeats queries)",
            {"target",
             "deadline s",
             "configurations",
             {"evaluated", 0},
             {"median ms", 3},
             {"max ms", 3},
             "feasible",
             {"cost USD", 6}}));
  double worst_ms = 0;
  for (const plan::Target target : {plan::Target::kLambda, plan::Target::kSlurm}) {
    const plan::CostModel cost(
        plan::CostModelOptions{.model = &model, .target = target, .epochs = epochs, .s3 = &s3});
    // The fastest configuration sets the scale of meaningful deadlines.
    plan::PlanRequest probe{.deadline_s = 1e12};
    if (target == plan::Target::kSlurm) probe.space.max_workers = model.sync.max_workers();
    const double fastest =
        plan::plan(cost, {.deadline_s = 1e-9, .space = probe.space}).fastest->second.total_s;
    for (const double factor : {0.5, 1.05, 2.0, 10.0, 1e6}) {
      plan::PlanRequest request = probe;
      request.deadline_s = fastest * factor;
      std::vector<double> ms;
      plan::PlanResult result;
      for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        result = plan::plan(cost, request);
        ms.push_back(1e3 * seconds_since(start));
      }
      const double max_ms = *std::max_element(ms.begin(), ms.end());
      worst_ms = std::max(worst_ms, max_ms);
      full.add_row({std::string(plan::to_string(target)), request.deadline_s,
                    static_cast<std::int64_t>(result.space_size),
                    static_cast<std::int64_t>(result.evaluated), median(ms), max_ms,
                    result.feasible,
                    result.feasible ? result.ranked.front().second.cost_usd : 0.0});
    }
  }
  full.print();

  // Exhaustive search is feasible only on a small space: time both there.
  Table& small = report.add_table(
      Table("small_space", "exact planner against exhaustive search (W 1..8, M 128..3008 step 8)",
            {"target",
             "configurations",
             {"exhaustive ms", 1},
             {"plan ms", 3},
             {"speed-up", 0},
             "same answer"}));
  for (const plan::Target target : {plan::Target::kLambda, plan::Target::kSlurm}) {
    const plan::CostModel cost(
        plan::CostModelOptions{.model = &model, .target = target, .epochs = epochs, .s3 = &s3});
    plan::PlanRequest request;
    request.space.max_workers = target == plan::Target::kSlurm ? model.sync.max_workers() : 8;
    request.space.max_memory_mb = 3008;
    request.space.memory_step_mb = 8;
    request.deadline_s =
        2 * plan::plan(cost, {.deadline_s = 1e-9, .space = request.space}).fastest->second.total_s;
    auto start = std::chrono::steady_clock::now();
    const plan::PlanResult slow = plan::exhaustive_plan(cost, request);
    const double exhaustive_ms = 1e3 * seconds_since(start);
    start = std::chrono::steady_clock::now();
    const plan::PlanResult fast = plan::plan(cost, request);
    const double plan_ms = 1e3 * seconds_since(start);
    small.add_row({std::string(plan::to_string(target)), static_cast<std::int64_t>(fast.space_size),
                   exhaustive_ms, plan_ms, exhaustive_ms / plan_ms, slow.ranked == fast.ranked});
  }
  small.print();
  fmt::print("slowest full-space query: {:.1f} ms (target < 1000 ms)\n", worst_ms);
  report.set_summary("worst_full_space_ms", worst_ms);
  report.write();
  return 0;
}

}  // namespace conflux::bench
