#pragma once
/// @file communicator.hpp
/// A move-only owner of an MPI communicator with the typed collectives conflux uses.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "conflux/comm/mpi.hpp"

namespace conflux::comm {

/// A non-blocking reduction in flight; its buffer must outlive it. Move-only.
class PendingReduction {
 public:
  PendingReduction() = default;
  explicit PendingReduction(MPI_Request request) noexcept : request_(request) {}
  PendingReduction(PendingReduction&& other) noexcept
      : request_(std::exchange(other.request_, MPI_REQUEST_NULL)) {}
  PendingReduction& operator=(PendingReduction&& other) noexcept;
  PendingReduction(const PendingReduction&) = delete;
  PendingReduction& operator=(const PendingReduction&) = delete;
  /// Completes it if still in flight (a collective cannot be cancelled).
  ~PendingReduction();
  /// True until wait() completed it.
  bool active() const noexcept { return request_ != MPI_REQUEST_NULL; }
  /// Completes it; RuntimeError naming `what` after `timeout`.
  void wait(std::chrono::duration<double> timeout, const std::string& what);

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

/// Owns an MPI_Comm (freed on destruction) or views MPI_COMM_WORLD (never freed).
class Communicator {
 public:
  /// A view of MPI_COMM_WORLD.
  static Communicator world();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  /// MPI_Comm_split: ranks with equal color form a communicator, ordered by key.
  Communicator split(int color, int key) const;
  /// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks sharing this node.
  Communicator split_node_local() const;

  /// This process's rank.
  int rank() const noexcept { return rank_; }
  /// Number of ranks.
  int size() const noexcept { return size_; }
  /// The raw handle for MPI calls.
  MPI_Comm get() const noexcept { return comm_; }

  /// In-place element-wise sum over all ranks; waits at most `timeout`.
  void allreduce_sum(std::span<float> values, std::chrono::duration<double> timeout) const;
  /// In-place element-wise sum of doubles.
  void allreduce_sum(std::span<double> values, std::chrono::duration<double> timeout) const;
  /// Starts an in-place element-wise sum; the result is in `values` after wait().
  PendingReduction start_allreduce_sum(std::span<double> values) const;
  /// Maximum of one integer over all ranks.
  std::int64_t allreduce_max(std::int64_t value) const;
  /// Minimum of one integer over all ranks.
  std::int64_t allreduce_min(std::int64_t value) const;
  /// Rank `root`'s string, on every rank.
  std::string broadcast(const std::string& value, int root) const;
  /// Every rank's string in rank order, on `root` (empty elsewhere); at most 2 GiB in all.
  std::vector<std::string> gather(const std::string& value, int root) const;
  /// Blocks until every rank arrives.
  void barrier() const;

 private:
  Communicator(MPI_Comm comm, bool owned);
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace conflux::comm
