#include "plan_space.hpp"

#include "conflux/core/error.hpp"

namespace conflux::plan::detail {

bool sync_measured(const SyncTimeTable& sync, int workers) {
  return workers == 1 || std::any_of(sync.rows.begin(), sync.rows.end(),
                                     [workers](const auto& r) { return r.workers == workers; });
}

std::uint64_t combos_per_worker_count(Target target, int workers, std::uint64_t batches,
                                      int max_data_workers, std::uint64_t thread_counts) {
  // Per thread count: K = W with Ba = Bn (each with D in 0..max on SLURM), plus (on Lambda)
  // K < W with every pair Ba <= Bn.
  const std::uint64_t pairs = batches * (batches + 1) / 2;
  return thread_counts * (target == Target::kSlurm
                              ? batches * (static_cast<std::uint64_t>(max_data_workers) + 1)
                              : batches + static_cast<std::uint64_t>(workers - 1) * pairs);
}

std::vector<int> planned_threads(const CostModel& model, const PlanSpace& space) {
  std::vector<int> out = space.thread_counts;
  if (out.empty()) out.push_back(model.options().threads);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Grid make_grid(const CostModel& model, const PlanRequest& request) {
  const PlanSpace& s = request.space;
  Grid g;
  g.batches = s.batch_sizes;
  if (s.aggregator_batch > 0) g.batches.push_back(s.aggregator_batch);  // fixed: in the grid
  g.max_global_batch = s.max_global_batch;
  g.aggregator_batch = s.aggregator_batch;
  g.nonaggregator_batch_ratio = s.nonaggregator_batch_ratio;
  g.max_data_workers = s.max_data_workers;
  g.threads = planned_threads(model, s);
  std::sort(g.batches.begin(), g.batches.end());
  g.batches.erase(std::unique(g.batches.begin(), g.batches.end()), g.batches.end());
  for (int w = s.min_workers; w <= s.max_workers; ++w) {
    if (model.options().target == Target::kLambda || sync_measured(model.model().sync, w)) {
      g.workers.push_back(w);
    }
  }
  g.gpu = model.model().gpu.present();
  if (g.gpu) {
    // A GPU trainer's speed does not depend on a CPU share: one memory size, and the batches
    // whose GPU rates were measured.
    g.memory.push_back(s.min_memory_mb);
    std::erase_if(g.batches, [&](int b) { return model.model().gpu.at(b) == nullptr; });
    return g;
  }
  for (std::int64_t m = s.min_memory_mb; m <= s.max_memory_mb; m += s.memory_step_mb) {
    g.memory.push_back(static_cast<int>(m));
  }
  return g;
}

std::uint64_t space_size(const CostModel& model, const Grid& g) {
  std::uint64_t combos = 0;  // counted, not computed: the batch rules leave out combinations
  for_each_combo(model.options().target, g, [&](const Combo&) { ++combos; });
  return combos * g.memory.size();
}

// predict(), refusing a NaN: the search orders and compares predictions.
Scored evaluate(const CostModel& model, const Candidate& c) {
  const Prediction p = model.predict(c);
  CONFLUX_REQUIRE(!std::isnan(p.total_s) && !std::isnan(p.cost_usd),
                  "the model predicts NaN for W = {}, M = {} MB, K = {}, Ba = {}, Bn = {}, D = {}, "
                  "{} threads; check its coefficients",
                  c.workers, c.memory_mb, c.aggregators, c.aggregator_batch, c.nonaggregator_batch,
                  c.data_workers, model.threads_of(c));
  return {c, p};
}

// Best-first branch-and-bound over (combination, memory interval) nodes. Each node carries a
// certified lower bound on the cost (or time) of every configuration in it; the node with the

}  // namespace conflux::plan::detail
