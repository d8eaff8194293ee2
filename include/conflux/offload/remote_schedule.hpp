#pragma once
/// @file remote_schedule.hpp
/// A trainer's offload ratio and the schedule that applies it: batch by batch, whether the next
/// batch comes from a worker. With ratio r, r of every N consecutive batches do (error
/// diffusion, so the remote ones are spread evenly, e.g. r = 0.5 alternates). The ratio may
/// change between batches. One RemoteSchedule per trainer holds the ratio: the loader asks it,
/// the controller sets it, checkpoints save and restore its state.

#include <chrono>
#include <vector>

namespace conflux::comm {
class Communicator;
}

namespace conflux::offload {

/// What a schedule needs to continue exactly where it was (saved in every checkpoint).
struct ScheduleState {
  double ratio = 0;   ///< share of batches built by workers
  double credit = 0;  ///< error-diffusion credit carried to the next decision
};

/// Error-diffusion choice of remote batches at a changeable ratio.
class RemoteSchedule {
 public:
  /// Starts at ratio `ratio` (clamped to [0, 1]) with no credit.
  explicit RemoteSchedule(double ratio = 0);
  /// Sets a new ratio (clamped to [0, 1]) for the batches decided from now on.
  void set_ratio(double ratio) noexcept;
  /// The current ratio.
  double ratio() const noexcept { return state_.ratio; }
  /// The ratio and credit, as a checkpoint saves them.
  const ScheduleState& state() const noexcept { return state_; }
  /// Continues from a saved state (its ratio clamped to [0, 1]).
  void restore(const ScheduleState& state) noexcept;
  /// Whether the next batch should come from a worker.
  bool next_is_remote() noexcept;

 private:
  ScheduleState state_;
};

/// Collective over `trainers`: every trainer's schedule state, in trainer order (for the
/// checkpoint, which keeps one per trainer).
std::vector<ScheduleState> gather_schedule_states(const comm::Communicator& trainers,
                                                  const ScheduleState& own,
                                                  std::chrono::duration<double> timeout);

}  // namespace conflux::offload
