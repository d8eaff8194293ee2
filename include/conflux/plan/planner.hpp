#pragma once
/// @file planner.hpp
/// The exact planner: the cheapest configurations (workers, memory, aggregators, batches) whose
/// predicted training time meets a deadline, over the whole discrete space, either as distinct
/// (W, K, Ba, Bn) alternatives or as the top points of the space. plan() is a
/// best-first branch-and-bound over memory intervals whose bounds follow from the model's
/// structure (docs/planning.md proves it exact); exhaustive_plan() evaluates every point and
/// serves as its reference.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "conflux/plan/cost_model.hpp"

namespace conflux::plan {

/// A candidate with its prediction.
using Scored = std::pair<Candidate, Prediction>;

/// What to plan for.
struct PlanRequest {
  double deadline_s = 0;  ///< the deadline the user gave
  /// Reserve for prediction errors: predicted total time x (1 + margin) must meet the deadline.
  double margin = 0;
  int alternatives = 5;  ///< runners-up reported besides the best
  PlanSpace space{};     ///< the configurations searched
  /// true: the best and then the next cheapest configurations whose (W, K, Ba, Bn) differ from
  /// every one listed before, each at the cheapest feasible memory size of its (W, K, Ba, Bn);
  /// false: the exact top 1 + alternatives over all points (often the best's memory
  /// neighbours).
  bool distinct = true;
  /// The predicted total time a configuration may take: deadline_s / (1 + margin).
  double budget_s() const noexcept { return deadline_s / (1 + margin); }
};

/// The planner's answer.
struct PlanResult {
  std::vector<Scored> ranked{};     ///< feasible, best first, at most 1 + alternatives
  bool feasible = false;            ///< some configuration meets the deadline
  std::optional<Scored> fastest{};  ///< when infeasible: the fastest configuration of the space
  std::uint64_t evaluated = 0;      ///< predictions computed
  std::uint64_t space_size = 0;     ///< configurations in the space
  double elapsed_s = 0;             ///< wall time of the search
};

/// The ranking order: cost, then total time, W, M, K, Ba, Bn, all ascending.
bool cheaper(const Scored& x, const Scored& y) noexcept;
/// The order of the fastest configuration: total time, then cost, W, M, K, Ba, Bn.
bool faster(const Scored& x, const Scored& y) noexcept;

/// How much longer than predicted a run may take, as a fraction of the prediction.
struct DeadlineMargin {
  double fraction = 0;     ///< plan so that predicted * (1 + fraction) meets the deadline
  std::size_t points = 0;  ///< held-out errors it was derived from (0: given or none)
};

/// The margin under which 90 % of the held-out points would have met their prediction: the
/// 90th percentile (nearest rank) of measured / predicted - 1 over `loo_errors` ((predicted -
/// measured) / measured each), never below 0. {0, 0} without errors.
DeadlineMargin margin_from_held_out(const std::vector<double>& loo_errors);

/// InputError naming the problem when `request` cannot be planned with `model` (deadline,
/// ranges, batch list, a pole of T_train inside the memory range, unmeasured SLURM counts).
void validate_request(const CostModel& model, const PlanRequest& request);

/// The exact top 1 + alternatives by cheaper() among the configurations meeting the deadline
/// (with request.distinct: among the cheapest feasible point of each (W, K, Ba, Bn)), and the
/// exact fastest one when none does. On the SLURM target only worker
/// counts with a measured sync time (and W = 1) are in the space.
PlanResult plan(const CostModel& model, const PlanRequest& request);

/// The same answer by evaluating every configuration (for tests; slow on large spaces).
PlanResult exhaustive_plan(const CostModel& model, const PlanRequest& request);

}  // namespace conflux::plan
