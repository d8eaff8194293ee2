#pragma once
/// @file window_meter.hpp
/// The always-on window meter: adds up where each training step's time went and, once per
/// window, turns the input pipeline's counters into rates (local build rate, per-worker
/// service rate, busy share and queue depth). A window feeds the ratio controller and becomes
/// one line of profile.jsonl. Per step it costs a few additions; the counters are read once per
/// window.

#include <cstddef>
#include <string>
#include <vector>

#include "conflux/core/elapsed.hpp"
#include "conflux/offload/pipeline_counters.hpp"
#include "conflux/offload/ratio_controller.hpp"
#include "conflux/offload/step_times.hpp"
#include "conflux/telemetry/run_record.hpp"

namespace conflux::offload {

/// One worker in a window, as seen by one trainer.
struct WorkerReport {
  bool live = true;
  std::uint64_t answers = 0;      ///< answers used in the window
  std::uint64_t timeouts = 0;     ///< requests given up in the window
  double service_rate = 0;        ///< batches/s it can build (1 / its latest service time)
  double busy_fraction = 0;       ///< its latest reported busy share
  std::uint32_t queue_depth = 0;  ///< requests waiting at it (latest report)
  std::uint32_t in_flight = 0;    ///< this trainer's requests outstanding at it
};

/// One measured window of one trainer.
struct WindowReport {
  double start_s = 0;  ///< since the meter started
  double seconds = 0;
  std::size_t first_step = 0;
  std::size_t steps = 0;
  StepTimes total;              ///< sums over the window's steps
  double offload_ratio = 0;     ///< in force at the end of the window
  double local_build_rate = 0;  ///< batches/s the trainer's own threads can build
  std::size_t local_built = 0;  ///< batches they built in the window
  std::size_t delivered = 0;    ///< batches the loop received in the window
  std::vector<WorkerReport> workers;
  ControllerInput input;  ///< the same window as the ratio controller sees it
};

/// Per-trainer window meter.
class WindowMeter {
 public:
  /// Windows of `interval_s` seconds; a window also ends after each step count listed in
  /// `boundaries` (e.g. the end of the controller's warm-up and start-up measurement).
  WindowMeter(double interval_s, std::vector<std::size_t> boundaries = {});
  /// Records one step; true when the window is complete (then call close()).
  bool record(const StepTimes& times, SteadyClock::time_point now);
  /// Ends the window with the pipeline's counters now; the next window starts.
  WindowReport close(const PipelineCounters& counters, double offload_ratio,
                     SteadyClock::time_point now);
  /// Steps recorded so far.
  std::size_t steps() const noexcept { return steps_; }

 private:
  void add_workers(const PipelineCounters& counters, WindowReport& window) const;

  SteadyClock::duration interval_;
  std::vector<std::size_t> boundaries_;
  SteadyClock::time_point origin_, window_start_;
  std::size_t steps_ = 0, window_first_step_ = 0;
  StepTimes window_;
  PipelineCounters previous_;
};

/// The window as trainer `trainer`'s profile-trainer<t>.jsonl record: per-step means of the
/// step times, rates, and each worker.
telemetry::WindowRecord profile_record(const WindowReport& window, int trainer);

/// profile_record() as one JSON object (a profile-trainer<t>.jsonl line, no newline).
std::string profile_json_line(const WindowReport& window, int trainer);

}  // namespace conflux::offload
