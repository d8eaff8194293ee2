#pragma once
/// @file plan_output.hpp
/// What `conflux plan` prints and writes: the report of a PlanResult, the one-line answer when
/// no configuration meets the deadline, the chosen configuration as conflux TOML, and an
/// #SBATCH header sized for it.

#include <string>
#include <string_view>
#include <vector>

#include "conflux/config/config.hpp"
#include "conflux/plan/cost_model.hpp"
#include "conflux/plan/planner.hpp"

namespace conflux::plan {

/// The chosen configuration with its predicted time, cost and their breakdowns, a table of
/// the alternatives, why it was chosen, and how much the search evaluated. Needs a feasible
/// result (render_infeasible() otherwise).
std::string render_plan_report(const PlanResult& result, const CostModel& model,
                               const PlanRequest& request);

/// "no configuration meets 60 s; the fastest is 1776 s with 64 workers x 10240 MB, ..." for
/// an infeasible result.
std::string render_infeasible(const PlanResult& result, const PlanRequest& request);

/// The config keys a candidate sets: cluster.trainers, cluster.workers (D), data.offload_ratio
/// (`offload_ratio` to three decimals with data workers, else 0), train.batch_size (global:
/// K Ba + (W - K) Bn), comm.* (K-Reduce, or allreduce with the K-Reduce keys reset),
/// limits.memory_mb and limits.ranks (the trainers alone with data workers, else all).
std::vector<Setting> planned_settings(const Candidate& c, Target target, double offload_ratio = 0);

/// How the learning rate follows a changed global batch B (from the config's B0 and lr0).
enum class LrScaling {
  kNone,    ///< lr0 as it is
  kLinear,  ///< lr0 B / B0 (Goyal et al.), with one epoch of warm-up when it grows and the
            ///< config has none
  kSqrt,    ///< lr0 sqrt(B / B0) (Krizhevsky's rule, often used with Adam)
};

/// The learning-rate keys for global batch `batch`: train.lr, and train.warmup_steps when
/// kLinear raises the rate of a config without warm-up (one epoch of `epoch_samples`).
std::vector<Setting> scaled_lr_settings(const Config& base, std::int64_t batch, LrScaling scaling,
                                        std::uint64_t epoch_samples);

/// `base` with the candidate's keys set (planned_settings, then `lr` as scaled_lr_settings),
/// as its launchable TOML (resolved, run.dir as written) headed by "# conflux plan (target):
/// the choice": a complete config, ready to train with. InputError when the candidate does not
/// fit the rest of `base` (e.g. data.offload_ratios per trainer).
std::string emit_config(const Candidate& c, Target target, const Config& base,
                        const std::vector<Setting>& lr = {}, double offload_ratio = 0);

/// #SBATCH lines for the candidate: W tasks of ceil(M / mb_per_vcpu) CPUs sharing M MB, a
/// time limit of the predicted time plus 20 % rounded up to minutes, SIGUSR1 120 s before it
/// (conflux checkpoints) and requeueing; with data workers a heterogeneous job whose second
/// component holds D tasks of `worker_threads` CPUs.
std::string emit_sbatch_header(const Candidate& c, double predicted_total_s,
                               std::string_view job_name, double mb_per_vcpu,
                               int worker_threads = 1);

/// Seconds as "850 ms", "12.34 s", "1776 s" or "1776 s (0:29:36)" for reports.
std::string format_seconds(double seconds);
/// US dollars with four significant digits, e.g. "$0.01234", "$12.35".
std::string format_usd(double usd);

}  // namespace conflux::plan
