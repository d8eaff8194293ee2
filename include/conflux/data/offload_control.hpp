#pragma once
/// @file offload_control.hpp
/// The knob a controller turns while training runs: the share of batches built by workers.

namespace conflux::data {

/// Reads and changes a trainer's offload ratio between steps.
class OffloadControl {
 public:
  virtual ~OffloadControl() = default;
  /// Fraction of batches requested from worker ranks, in [0, 1].
  virtual double offload_ratio() const = 0;
  /// Sets the fraction for batches scheduled from now on (clamped to [0, 1]).
  virtual void set_offload_ratio(double ratio) = 0;
};

}  // namespace conflux::data
