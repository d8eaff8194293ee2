#pragma once
/// @file plan_output_detail.hpp
/// What the plan reports share (private to src/plan): number and candidate formatting, and
/// the parts of the report for GPU trainers (plan_output_gpu.cpp).

#include <cstdint>
#include <string>

#include "conflux/plan/cost_model.hpp"
#include "conflux/plan/planner.hpp"

namespace conflux::plan::detail {

/// "1234567" -> "1,234,567" (counts of configurations are large).
std::string grouped(std::uint64_t n);
/// The plural ending of a count's noun ("1 worker", "2 workers").
const char* plural(std::int64_t count);
/// One line naming a candidate ("2 workers x 1769 MB, K = 2, ..." or "1 GPU trainer, ...").
std::string describe(const Candidate& c);
/// The offload ratio as emitted: three decimals (what the prediction used, to 0.0005).
double emitted_ratio(double ratio);
/// The change from `base` to `value` in per cent of `base` ("+1.25 %"; "-" when base is 0).
std::string percent(double value, double base, bool sign = true);

/// GPU trainers: what the plan prices and what feeds them (the report's heading lines).
std::string gpu_text(const CostModel& model, const PlanSpace& space);
/// GPU trainers: the chosen configuration, its bottleneck and cost, and the data workers per
/// GPU around it.
std::string render_chosen_gpu(const PlanResult& result, const CostModel& model,
                              const PlanRequest& request);

}  // namespace conflux::plan::detail
