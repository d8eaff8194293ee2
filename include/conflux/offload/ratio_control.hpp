#pragma once
/// @file ratio_control.hpp
/// What a trainer's input pipeline exposes to offload tuning while training runs: the ratio in
/// force (the share of batches built by workers), a way to change it, and the counters a
/// decision is taken from.

#include "conflux/offload/pipeline_counters.hpp"

namespace conflux::offload {

/// Reads and changes a trainer's offload ratio between steps.
class RatioControl {
 public:
  virtual ~RatioControl() = default;
  /// Fraction of batches requested from worker ranks, in [0, 1].
  virtual double offload_ratio() const = 0;
  /// Sets the fraction for batches scheduled from now on (clamped to [0, 1]).
  virtual void set_offload_ratio(double ratio) = 0;
  /// The pipeline's counters so far.
  virtual PipelineCounters pipeline_counters() const = 0;
};

}  // namespace conflux::offload
