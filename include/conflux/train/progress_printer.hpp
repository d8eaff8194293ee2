#pragma once
/// @file progress_printer.hpp
/// Human-readable progress lines (rank 0 only).

#include "conflux/core/log.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// Prints step and epoch lines a person can follow.
class ProgressPrinter final : public TrainingCallback {
 public:
  /// Prints through `log`.
  explicit ProgressPrinter(const Logger& log) : log_(log) {}
  void on_train_begin(const model::Model& model) override;
  void on_step_report(const StepReport& r) override;
  void on_epoch_end(const EpochReport& r) override;
  void on_train_end(const model::Model& model, const TrainSummary& s) override;

 private:
  void print_noise_scale(const EpochReport& r);
  const Logger& log_;
};

}  // namespace conflux::train
