#include "conflux/plan/steps_to_target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string_view>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/json_reader.hpp"
#include "conflux/core/toml_file.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::plan {
namespace {

// One JSON object per line; InputError naming file:line for a line that is not one.
std::vector<JsonValue> read_json_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  CONFLUX_REQUIRE(in.good(), "reference run: cannot read {}", path.string());
  std::vector<JsonValue> lines;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(parse_json(line, fmt::format("{}:{}", path.string(), number)));
    CONFLUX_REQUIRE(lines.back().is_object(), "{}:{}: expected a JSON object per line",
                    path.string(), number);
  }
  return lines;
}

struct Reached {
  double step = 0;  // global step at which the target was reached
  int epoch = 0;    // 1-based
};

// The first report whose window mean training loss is <= the target.
Reached first_loss_at_or_below(const std::filesystem::path& dir, const TrainingTarget& t) {
  const auto path = dir / train::run_files::kSteps;
  double best = std::numeric_limits<double>::infinity();
  for (const JsonValue& r : read_json_lines(path)) {
    const double loss = r.number_or("loss", std::numeric_limits<double>::quiet_NaN());
    if (std::isnan(loss)) continue;
    best = std::min(best, loss);
    if (loss <= t.value)
      return {.step = r.number_or("step", 0), .epoch = static_cast<int>(r.number_or("epoch", 0))};
  }
  throw InputError(fmt::format("reference run {}: never reached {} (lowest reported training "
                               "loss {:.4g}); train the reference longer or lower the target",
                               dir.string(), t.describe(), best),
                   __FILE__, __LINE__);
}

// The end of the first epoch whose test accuracy is >= the target.
Reached first_accuracy_at_or_above(const std::filesystem::path& dir, const TrainingTarget& t,
                                   const std::vector<JsonValue>& epochs) {
  double best = -1;
  for (const JsonValue& e : epochs) {
    const double acc = e.number_or("test_accuracy", std::numeric_limits<double>::quiet_NaN());
    if (std::isnan(acc)) continue;
    best = std::max(best, acc);
    if (acc < t.value) continue;
    const int epoch = static_cast<int>(e.number_or("epoch", 0));
    // The epoch's last report (every epoch ends with one) holds its global step.
    double step = -1;
    for (const JsonValue& r : read_json_lines(dir / train::run_files::kSteps))
      if (static_cast<int>(r.number_or("epoch", 0)) == epoch) step = r.number_or("step", step);
    CONFLUX_REQUIRE(step > 0, "reference run {}: {} has no report of epoch {}", dir.string(),
                    train::run_files::kSteps, epoch);
    return {.step = step, .epoch = epoch};
  }
  throw InputError(
      best < 0 ? fmt::format("reference run {}: {} holds no test accuracy (train.eval = false?)",
                             dir.string(), train::run_files::kMetrics)
               : fmt::format("reference run {}: never reached {} (best test accuracy {:.4f}); "
                             "a target above what the model reached cannot be planned for",
                             dir.string(), t.describe(), best),
      __FILE__, __LINE__);
}

}  // namespace

std::string TrainingTarget::describe() const {
  return kind == Kind::kTestAccuracy ? fmt::format("test accuracy >= {:g}", value)
                                     : fmt::format("training loss <= {:g}", value);
}

std::uint64_t StepsToTarget::steps(double global_batch) const noexcept {
  return static_cast<std::uint64_t>(std::ceil(s_min * (1.0 + b_noise / global_batch)));
}

std::int64_t epochs_covering(std::uint64_t steps, std::uint64_t epoch_samples,
                             std::uint64_t global_batch) noexcept {
  const std::uint64_t per_epoch = std::max<std::uint64_t>(
      1, (epoch_samples + global_batch - 1) / std::max<std::uint64_t>(1, global_batch));
  return std::max<std::int64_t>(1, static_cast<std::int64_t>((steps + per_epoch - 1) / per_epoch));
}

StepsToTarget steps_to_target_from_run(const std::filesystem::path& run_dir,
                                       const TrainingTarget& target) {
  CONFLUX_REQUIRE(target.value > 0 && std::isfinite(target.value) &&
                      (target.kind == TrainingTarget::Kind::kTrainingLoss || target.value <= 1),
                  "the target must be an accuracy in (0, 1] or a loss > 0, not {}", target.value);
  const auto config_path = run_dir / train::run_files::kConfig;
  const toml::table config = parse_toml_file(config_path);
  const toml::table* train = config["train"].as_table();
  CONFLUX_REQUIRE(train != nullptr, "{}: no [train] table (not a conflux run directory?)",
                  config_path.string());
  const double batch = toml_number(*train, "batch_size", config_path.string());
  const std::vector<JsonValue> epochs = read_json_lines(run_dir / train::run_files::kMetrics);
  const Reached reached = target.kind == TrainingTarget::Kind::kTrainingLoss
                              ? first_loss_at_or_below(run_dir, target)
                              : first_accuracy_at_or_above(run_dir, target, epochs);
  const auto epoch = std::find_if(epochs.begin(), epochs.end(), [&](const JsonValue& e) {
    return static_cast<int>(e.number_or("epoch", 0)) == reached.epoch;
  });
  const double b_noise = epoch == epochs.end() ? std::numeric_limits<double>::quiet_NaN()
                                               : epoch->number_or("noise_scale", -1);
  // Measured, but not positive (JSON null): too few or too noisy steps to tell.
  CONFLUX_REQUIRE(epoch == epochs.end() || epoch->number_or("noise_steps", 0) == 0 ||
                      (b_noise > 0 && std::isfinite(b_noise)),
                  "reference run {}: the gradient noise scale of epoch {} (where it reached {}) "
                  "could not be told from its {} steps (tr(Sigma) or |G|^2 not positive); use a "
                  "target the run reached in a later epoch, or a reference with longer epochs",
                  run_dir.string(), reached.epoch, target.describe(),
                  epoch->number_or("noise_steps", 0));
  CONFLUX_REQUIRE(
      b_noise > 0 && std::isfinite(b_noise),
      "reference run {}: {} holds no gradient noise scale for epoch {}, where it reached {}; "
      "rerun the reference with --set train.noise_scale=true on 2 or more trainers",
      run_dir.string(), train::run_files::kMetrics, reached.epoch, target.describe());
  return {.target = target,
          .s_min = reached.step / (1.0 + b_noise / batch),
          .b_noise = b_noise,
          .reference_batch = batch,
          .reference_steps = reached.step,
          .source = run_dir.string()};
}

}  // namespace conflux::plan
