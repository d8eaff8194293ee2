#pragma once
/// @file offload_schedule.hpp
/// Decides, batch by batch, whether a trainer's next batch comes from a worker: with ratio r,
/// r of every N consecutive batches do (error diffusion, so the remote ones are spread evenly,
/// e.g. r = 0.5 alternates). The ratio may change between batches.

namespace conflux::offload {

/// What a schedule needs to continue exactly where it was (saved in every checkpoint).
struct ScheduleState {
  double ratio = 0;   ///< share of batches built by workers
  double credit = 0;  ///< error-diffusion credit carried to the next decision
};

/// Error-diffusion choice of remote batches at a changeable ratio.
class OffloadSchedule {
 public:
  /// Starts at ratio `ratio` in [0, 1].
  explicit OffloadSchedule(double ratio);
  /// Sets a new ratio (clamped to [0, 1]) for the batches decided from now on.
  void set_ratio(double ratio) noexcept;
  /// The current ratio.
  double ratio() const noexcept { return ratio_; }
  /// The error-diffusion credit carried to the next decision (saved in checkpoints).
  double credit() const noexcept { return credit_; }
  /// Restores a saved ratio and credit.
  void restore(double ratio, double credit) noexcept {
    set_ratio(ratio);
    credit_ = credit;
  }
  /// Whether the next batch should come from a worker.
  bool next_is_remote() noexcept;

 private:
  double ratio_ = 0;
  double credit_ = 0;
};

}  // namespace conflux::offload
