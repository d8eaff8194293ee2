#pragma once
/// @file gradient_sync.hpp
/// Gradient synchronisation strategies among trainer ranks behind one interface: MPI allreduce
/// (here) and K-Reduce (kreduce_sync.hpp). GPU trainers sum with NCCL (gpu/gradient_syncs.hpp).

#include <chrono>
#include <memory>
#include <span>
#include <string>

#include "conflux/comm/communicator.hpp"
#include "conflux/comm/gradient_buckets.hpp"

namespace conflux::comm {

/// What exchange() left in the gradient buffer for the trainer to apply.
enum class Merged {
  kCurrent,   ///< the sum over all trainers of this step's gradients
  kPrevious,  ///< the sum of the previous step's gradients (a stale K-Reduce non-aggregator)
  kNone,      ///< nothing to apply yet (a stale non-aggregator's first step after a drain)
};

/// Sums each trainer's gradient contribution over all trainers.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// Strategy name for logs, e.g. "mpi-allreduce".
  virtual std::string name() const = 0;
  /// Replaces `gradients` with their element-wise sum over all trainers; synchronous on every
  /// trainer, whatever the strategy's staleness (nothing may be owed: see drain()).
  virtual void sum(std::span<float> gradients) = 0;
  /// During backward: `range` of this step's `gradients` is final (a bucket, gradient_buckets.hpp)
  /// while backward still computes the rest; a strategy may start summing it now. exchange()
  /// completes the step whatever was announced. Ignored by default (the host strategies sum
  /// everything in exchange()).
  virtual void gradients_ready(std::span<float> /*gradients*/, GradientRange /*range*/) {}
  /// One training step's exchange: contributes `gradients` and leaves in them the merged
  /// gradient this trainer applies now. Strategies without staleness just sum().
  virtual Merged exchange(std::span<float> gradients) {
    sum(gradients);
    return Merged::kCurrent;
  }
  /// Completes everything in flight; true when it wrote into `gradients` a merged gradient that
  /// this trainer still owes its replica (the last exchanged step's), which the trainer must
  /// apply so that all replicas are identical again. A sync point: call it on every trainer.
  virtual bool drain(std::span<float> /*gradients*/) { return false; }
  /// Lets transfers in flight progress (MPI progresses only inside MPI calls); cheap, call it
  /// now and then while computing.
  virtual void progress() {}
};

/// MPI_Iallreduce(MPI_SUM) among the trainer ranks with a bounded wait.
class MpiAllreduceSync final : public GradientSync {
 public:
  /// Uses `trainers` (which must outlive this object).
  MpiAllreduceSync(const Communicator& trainers, std::chrono::duration<double> timeout)
      : trainers_(trainers), timeout_(timeout) {}
  std::string name() const override { return "mpi-allreduce"; }
  void sum(std::span<float> gradients) override {
    if (trainers_.size() > 1) trainers_.allreduce_sum(gradients, timeout_);
  }

 private:
  const Communicator& trainers_;
  std::chrono::duration<double> timeout_;
};

}  // namespace conflux::comm
