#include "cross_key_rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "conflux/core/error.hpp"

namespace conflux {

namespace {

void check_transform_and_batch(const Config& c) {
  const auto& t = c.transform();
  CONFLUX_REQUIRE(t.mean.size() == t.std.size() || t.mean.size() == 1 || t.std.size() == 1,
                  "{}: transform.mean has {} values but transform.std has {}; give 1 or one "
                  "per channel for each",
                  c.where("transform.std"), t.mean.size(), t.std.size());
  CONFLUX_REQUIRE(c.train().batch_size >= c.cluster().trainers,
                  "{}: train.batch_size = {} is smaller than cluster.trainers = {}; every "
                  "trainer needs at least one sample per step",
                  c.where("train.batch_size"), c.train().batch_size, c.cluster().trainers);
}

void check_offload(const Config& c) {
  const auto& d = c.data();
  CONFLUX_REQUIRE(!d.offload_auto || d.offload_ratios.empty(),
                  "{}: data.offload_ratio = \"auto\" and data.offload_ratios both given; the "
                  "controller sets every trainer's ratio, so drop data.offload_ratios",
                  c.where("data.offload_ratios"));
  CONFLUX_REQUIRE(!d.offload_auto || c.profile().enabled,
                  "{}: data.offload_ratio = \"auto\" needs the profiler (profile.enabled = "
                  "true)",
                  c.where("profile.enabled"));
  CONFLUX_REQUIRE(d.offload_ratios.empty() ||
                      d.offload_ratios.size() == static_cast<std::size_t>(c.cluster().trainers),
                  "{}: data.offload_ratios has {} values but cluster.trainers = {}; give one "
                  "per trainer or none",
                  c.where("data.offload_ratios"), d.offload_ratios.size(), c.cluster().trainers);
}

void check_limits(const Config& c) {
  CONFLUX_REQUIRE(c.limits().memory_mb == 0 || c.limits().memory_mb >= 128,
                  "{}: limits.memory_mb = {} is below Lambda's smallest size; give 0 (no "
                  "limit) or 128..10240",
                  c.where("limits.memory_mb"), c.limits().memory_mb);
}

void check_kreduce(const Config& c) {
  const auto& comm = c.comm();
  CONFLUX_REQUIRE(comm.aggregators <= c.cluster().trainers,
                  "{}: comm.aggregators = {} exceeds cluster.trainers = {}",
                  c.where("comm.aggregators"), comm.aggregators, c.cluster().trainers);
  CONFLUX_REQUIRE(
      comm.strategy == "kreduce" || (comm.aggregators == 0 && comm.nonaggregator_batch_size == 0 &&
                                     !comm.stale_nonaggregators),
      "{}: comm.aggregators, comm.nonaggregator_batch_size and "
      "comm.stale_nonaggregators need comm.strategy = \"kreduce\"",
      c.where("comm.strategy"));
  // K-Reduce's unequal batches: the step stays train.batch_size samples; the W-K
  // non-aggregators take Bn each and the K aggregators share the rest (data::BatchSplit).
  const std::int64_t w = c.cluster().trainers;
  const std::int64_t k = comm.aggregators == 0 ? w : comm.aggregators;
  const std::int64_t bn = comm.nonaggregator_batch_size;
  const std::int64_t batch = c.train().batch_size;
  CONFLUX_REQUIRE(bn == 0 || k < w,
                  "{}: comm.nonaggregator_batch_size = {} but every trainer is an aggregator "
                  "(comm.aggregators = {}, cluster.trainers = {}); set comm.aggregators below "
                  "cluster.trainers or leave comm.nonaggregator_batch_size at 0",
                  c.where("comm.nonaggregator_batch_size"), bn, comm.aggregators, w);
  CONFLUX_REQUIRE(bn == 0 || batch - (w - k) * bn >= k,
                  "{}: comm.nonaggregator_batch_size = {} for {} non-aggregator(s) leaves {} of "
                  "train.batch_size = {} for comm.aggregators = {}; every aggregator needs at "
                  "least one sample per step: at most {} per non-aggregator",
                  c.where("comm.nonaggregator_batch_size"), bn, w - k, batch - (w - k) * bn, batch,
                  k, (batch - k) / std::max<std::int64_t>(1, w - k));
}

void check_optimizer(const Config& c) {
  const auto& t = c.train();
  const bool sgd = t.optimizer == "sgd";
  CONFLUX_REQUIRE(sgd || t.momentum == 0.0,
                  "{}: train.momentum = {} applies to sgd only; train.optimizer = \"{}\" uses "
                  "train.adam_beta1 and train.adam_beta2",
                  c.where("train.momentum"), t.momentum, t.optimizer);
  CONFLUX_REQUIRE(!t.nesterov || (sgd && t.momentum > 0.0),
                  "{}: train.nesterov = true needs train.optimizer = \"sgd\" and "
                  "train.momentum > 0 (as PyTorch requires)",
                  c.where("train.nesterov"));
}

// Milestones and step sizes are global steps counted from step 0, like the warm-up; a decay
// inside the warm-up would make the ramp's target ambiguous, so none may fall there.
void check_lr_schedule(const Config& c) {
  const auto& t = c.train();
  const bool step = t.lr_schedule == "step";
  const bool multistep = t.lr_schedule == "multistep";
  CONFLUX_REQUIRE(step == (t.lr_step_size > 0), "{}: train.lr_step_size = {} {}",
                  c.where("train.lr_step_size"), t.lr_step_size,
                  step ? "but train.lr_schedule = \"step\" needs a step size >= 1"
                       : "applies only to train.lr_schedule = \"step\"; leave it at 0");
  CONFLUX_REQUIRE(!step || t.lr_step_size >= t.warmup_steps,
                  "{}: train.lr_step_size = {} is shorter than train.warmup_steps = {}; the "
                  "first decay would fall inside the warm-up",
                  c.where("train.lr_step_size"), t.lr_step_size, t.warmup_steps);
  CONFLUX_REQUIRE(multistep == !t.lr_milestones.empty(), "{}: train.lr_milestones {}",
                  c.where("train.lr_milestones"),
                  multistep ? "is empty but train.lr_schedule = \"multistep\" needs at least one"
                            : "applies only to train.lr_schedule = \"multistep\"; leave it empty");
  for (std::size_t i = 0; i < t.lr_milestones.size(); ++i) {
    const float m = t.lr_milestones[i];
    CONFLUX_REQUIRE(m == std::floor(m), "{}: train.lr_milestones[{}] = {} is not a whole step",
                    c.where("train.lr_milestones"), i, m);
    CONFLUX_REQUIRE(i == 0 || m > t.lr_milestones[i - 1],
                    "{}: train.lr_milestones must increase, but entry {} ({}) follows {}",
                    c.where("train.lr_milestones"), i, m, t.lr_milestones[i - 1]);
    CONFLUX_REQUIRE(static_cast<double>(m) >= static_cast<double>(t.warmup_steps),
                    "{}: train.lr_milestones[{}] = {} falls inside the warm-up "
                    "(train.warmup_steps = {})",
                    c.where("train.lr_milestones"), i, m, t.warmup_steps);
  }
}

// oneDNN picks its kernels for the CPU it runs on, and they differ in the order of their
// sums: with portable results asked for, the convolutions must be OpenBLAS's pinned ones.
void check_conv_kernels(const Config& c) {
  CONFLUX_REQUIRE(
      !(c.sources().portable_results && c.train().conv_kernels == "onednn"),
      "{}: train.conv_kernels = \"onednn\" cannot give portable results "
      "(CONFLUX_BLAS_PIN=portable): oneDNN picks its kernels per CPU; set \"im2col\" or "
      "\"auto\", or unset CONFLUX_BLAS_PIN",
      c.where("train.conv_kernels"));
}

}  // namespace

void check_cross_key_rules(const Config& config) {
  check_transform_and_batch(config);
  check_offload(config);
  check_limits(config);
  check_kreduce(config);
  check_optimizer(config);
  check_lr_schedule(config);
  check_conv_kernels(config);
}

}  // namespace conflux
