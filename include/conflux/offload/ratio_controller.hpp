#pragma once
/// @file ratio_controller.hpp
/// Chooses a trainer's offload ratio from its measured windows, FastFlow-style at start-up and
/// then continuously. The model: a trainer consumes at most C batches/s (compute ceiling), its
/// own threads build L batches/s, the workers can give it R batches/s (their capacity divided
/// among the trainers that share them). At ratio r it gets min(C, L / (1 - r), R / r)
/// batches/s, so the least ratio that reaches C is 1 - L / C when L + R >= C, and otherwise the
/// ratio that balances both sources, R / (L + R). The model seeds the ratio; while running, an
/// extremum search on the measured step rate refines it (base, probe one step away, move if
/// clearly faster or as fast with less offloading, else turn and halve the step), because where
/// trainers and workers share cores the rates the model assumes change with the ratio itself.
/// Losing or regaining workers re-seeds from the model at once.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace conflux::offload {

/// Settings of a RatioController.
struct RatioControllerOptions {
  int initial_steps = 5;              ///< warm-up steps, ignored
  int profile_steps = 20;             ///< steps of the start-up measurement
  double bottleneck_threshold = 1.3;  ///< input-bound when C / L exceeds it (start-up)
  double hysteresis = 0.03;           ///< smallest ratio change applied
  double headroom = 0.05;             ///< aim at (1 + headroom) C, so that waits vanish
  double wait_tolerance = 0.02;       ///< data waits below this share of time are ignored
  int eval_windows = 2;               ///< windows per measurement of the search
};

/// One measured window of one trainer, as the controller sees it.
struct ControllerInput {
  /// What one worker contributes to the trainer's estimate.
  struct Worker {
    bool live = true;
    double build_seconds = 0;  ///< its mean service time per batch in the window (0: unknown)
  };
  double seconds = 0;        ///< wall time of the window
  std::size_t steps = 0;     ///< steps in it
  double wait_local_s = 0;   ///< data wait for locally built batches
  double wait_remote_s = 0;  ///< data wait for batches from workers
  double busy_s = 0;         ///< step time without data waits (compute, sync, callbacks)
  std::size_t local_built = 0;
  double local_build_s = 0;  ///< wall time of those local builds
  int trainers = 1;          ///< trainers sharing the workers
  std::vector<Worker> workers;
};

/// The controller's current estimates, in batches per second of this trainer.
struct RateEstimates {
  double compute = 0;     ///< C: ceiling when data is never waited for
  double local = 0;       ///< L: the trainer's own threads
  double remote = 0;      ///< R: this trainer's share of the live workers (0: none)
  double wait_share = 0;  ///< data wait / wall time in the last window
};

/// A ratio decision with its reason (for the log and the timeline).
struct RatioDecision {
  double previous = 0;
  double ratio = 0;
  std::string reason;
  RateEstimates estimates;
  bool probe = false;  ///< a trial of the search (not logged as a decision)
};

/// Per-trainer offload-ratio controller. Pure logic: feed it windows, apply its decisions.
class RatioController {
 public:
  /// Starts at `initial_ratio`.
  explicit RatioController(RatioControllerOptions options, double initial_ratio = 0);
  /// Takes one window; returns a decision when the ratio should change (or at the end of the
  /// start-up measurement, which is always reported).
  std::optional<RatioDecision> on_window(const ControllerInput& window);
  /// The ratio in force.
  double ratio() const noexcept { return ratio_; }
  /// The latest estimates.
  const RateEstimates& estimates() const noexcept { return estimates_; }
  /// Whether the start-up measurement is over.
  bool profiled() const noexcept { return phase_ == Phase::kRunning; }

 private:
  enum class Phase { kWarmup, kProfiling, kRunning };
  void update_estimates(const ControllerInput& w);
  double model_target() const;
  RatioDecision finish_startup();
  std::optional<RatioDecision> run(const ControllerInput& w);
  std::optional<RatioDecision> reseed_for_workers(int live, int before);
  std::optional<ControllerInput> measured_period(const ControllerInput& w);
  std::optional<RatioDecision> start_when_input_bound(int live, double waits);
  std::optional<RatioDecision> probe_from_base(double rate, double waits);
  std::optional<RatioDecision> judge_probe(double rate, int live);
  std::optional<RatioDecision> decide(double ratio, bool probe, std::string why);
  std::optional<RatioDecision> seed(double ratio, const std::string& why, int live);

  RatioControllerOptions options_;
  double ratio_;
  Phase phase_ = Phase::kWarmup;
  std::size_t steps_seen_ = 0;
  ControllerInput startup_;  // the start-up measurement, accumulated
  RateEstimates estimates_;
  std::vector<double> worker_build_s_;  // smoothed service time per worker (0: unknown)
  // The search (running phase).
  bool climbing_ = false;  // offloading and searching; false: ratio 0 until input-bound
  int live_ = 0;           // live workers at the last window
  double base_ = 0;        // the ratio the search stands on
  double step_ = 0.1;
  int direction_ = -1;
  bool probing_ = false;  // measuring the probe (else the base)
  double base_rate_ = 0;  // measured at the base
  // The best base rate since the search last (re)started: "as fast with less offloading" is
  // judged against it, so that small losses cannot add up step after step.
  double reached_rate_ = 0;
  int settled_ = 0;  // > 0: settled, measurements left until the next probe
  double settled_rate_ = 0;
  int failures_at_smallest_ = 0;
  ControllerInput eval_;  // the measurement in progress
  int eval_windows_ = 0;
};

}  // namespace conflux::offload
