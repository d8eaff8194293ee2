#pragma once
/// @file checkpointer.hpp
/// Checkpointing as a training callback: every N steps and/or seconds, after the last step,
/// and at the first step boundary after SIGUSR1/SIGTERM/SIGINT (then training stops so the
/// job can exit with 75). Trainer 0 persists in the background (AsyncCheckpointWriter), so
/// the loop stalls only for the in-memory copy.

#include <array>
#include <chrono>
#include <filesystem>
#include <optional>

#include "conflux/ckpt/async_writer.hpp"
#include "conflux/ckpt/stop_signals.hpp"
#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/telemetry/timeline.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// What a Checkpointer needs.
struct CheckpointerOptions {
  const Config& config;
  const comm::Communicator& trainers;          ///< this rank is a trainer
  const ckpt::StopSignals* signals = nullptr;  ///< null: signals are not watched
  const Logger* log = nullptr;                 ///< trainer 0 logs checkpoints; null: silent
  std::filesystem::path resumed_from = {};     ///< the checkpoint this run continues, if any
  telemetry::Timeline* timeline = nullptr;     ///< marks each capture; null: none
};

/// Checkpoint timings over a run (trainer 0's are the meaningful ones).
struct CheckpointerStats {
  std::size_t taken = 0;     ///< snapshots captured
  double stall_seconds = 0;  ///< time the loop spent on them (copy, gathers, waiting)
  double max_stall_seconds = 0;
  double agree_seconds = 0;    ///< time of the per-step agreement on signals and timers
  ckpt::PersistStats persist;  ///< background writes (trainer 0)
};

/// The checkpointing callback; one per trainer rank, all trainers take part in every decision.
class Checkpointer final : public TrainingCallback {
 public:
  explicit Checkpointer(const CheckpointerOptions& options);
  void on_step_end(StepContext& context) override;
  void on_train_end(const model::Model& model, const TrainSummary& summary) override;
  /// The signal that stopped training (on this rank, or "another rank's" as -1), 0 if none.
  int stop_signal() const noexcept { return stop_signal_; }
  /// The newest checkpoint this run published (trainer 0), else empty.
  std::filesystem::path last_checkpoint() const;
  /// Timings so far.
  CheckpointerStats stats() const;

 private:
  void take(StepContext& context);

  const Config& config_;
  const comm::Communicator& trainers_;
  const ckpt::StopSignals* signals_;
  const Logger* log_;
  telemetry::Timeline* timeline_;
  std::chrono::duration<double> timeout_;
  std::optional<ckpt::AsyncCheckpointWriter> writer_;  // trainer 0 only
  ckpt::TrainingState scratch_;                        // snapshots of the other trainers
  std::chrono::steady_clock::time_point last_taken_;
  comm::PendingReduction agreement_;  // the flags of the previous step, being summed
  std::array<double, 3> agreement_flags_{};
  CheckpointerStats stats_;
  int stop_signal_ = 0;
};

}  // namespace conflux::train
