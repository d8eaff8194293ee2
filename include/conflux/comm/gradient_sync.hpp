#pragma once
/// @file gradient_sync.hpp
/// Gradient synchronisation strategies among trainer ranks behind one interface (MPI
/// allreduce now; NCCL and K-Reduce plug in here later).

#include <chrono>
#include <memory>
#include <span>
#include <string>

#include "conflux/comm/communicator.hpp"

namespace conflux::comm {

/// Sums each trainer's gradient contribution over all trainers, in place.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// Strategy name for logs, e.g. "mpi-allreduce".
  virtual std::string name() const = 0;
  /// Replaces `gradients` with their element-wise sum over all trainers.
  virtual void sum(std::span<float> gradients) = 0;
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
