#pragma once
/// @file kreduce_sync.hpp
/// K-Reduce (FasDL) gradient synchronisation over MPI point-to-point messages. Trainers
/// 0..K-1 are aggregators, K..W-1 non-aggregators. The flattened gradient is split into K
/// contiguous chunks; aggregator k receives chunk k from every trainer, sums the W
/// contributions in trainer order 0..W-1 (deterministic: the same bits on every run) and sends
/// the merged chunk back to every trainer. With stale non-aggregators, a non-aggregator sends
/// its step-s chunks and applies the merged gradient of step s-1 instead of waiting for step
/// s's, so its weights lag one step; drain() applies what it still owes, after which all
/// replicas are identical again.

#include <array>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "conflux/comm/gradient_sync.hpp"

namespace conflux::comm {

/// Elements [offset, offset + size) of a flattened gradient.
struct GradientChunk {
  std::size_t offset = 0;
  std::size_t size = 0;
};

/// Chunk `index` of a gradient of `total` elements split into `parts` contiguous chunks whose
/// sizes differ by at most one element, earlier chunks larger.
GradientChunk kreduce_chunk(std::size_t total, int parts, int index) noexcept;

/// Settings of a KReduceSync.
struct KReduceOptions {
  int aggregators = 0;                         ///< K; 0 = every trainer (K = W)
  bool stale_nonaggregators = false;           ///< non-aggregators apply merged sums a step late
  std::chrono::duration<double> timeout{600};  ///< longest wait for one exchange
};

/// K-Reduce among the trainer ranks, with bounded waits (cluster.peer_timeout_s).
class KReduceSync final : public GradientSync {
 public:
  /// Sums gradients of `gradient_size` elements among `trainers` (which must outlive this
  /// object). Collective only at the first exchange, which gives K-Reduce its own communicator
  /// (so that a trainer failing before then leaves no one waiting here).
  KReduceSync(const Communicator& trainers, std::size_t gradient_size, KReduceOptions options);
  /// Cancels what is still in flight (only on error paths: drain() completes everything).
  ~KReduceSync() override;
  KReduceSync(const KReduceSync&) = delete;
  KReduceSync& operator=(const KReduceSync&) = delete;

  /// E.g. "k-reduce (K=1 of 2, stale non-aggregators)".
  std::string name() const override;
  void sum(std::span<float> gradients) override;
  Merged exchange(std::span<float> gradients) override;
  bool drain(std::span<float> gradients) override;
  void progress() override;

  /// Number of aggregators K.
  int aggregators() const noexcept { return aggregators_; }
  /// Whether this trainer is an aggregator.
  bool is_aggregator() const noexcept { return rank_ < aggregators_; }
  /// Whether this trainer applies merged gradients one step late.
  bool stale() const noexcept { return stale_ && !is_aggregator(); }

 private:
  using Clock = std::chrono::steady_clock;
  Merged exchange_impl(std::span<float> gradients, bool late);
  void reduce_own_chunk(std::span<float> gradients, Clock::time_point deadline);
  // The steps of one exchange, in the order they post their MPI operations.
  void post_contribution_receives(MPI_Comm comm);
  void post_merged_receives(std::span<float> into, MPI_Comm comm, std::vector<MPI_Request>& reqs);
  void send_contributions(MPI_Comm comm);
  void wait_merged(std::vector<MPI_Request>& reqs, Clock::time_point deadline);
  Merged take_owed(std::span<float> gradients, Clock::time_point deadline);
  void wait(std::span<MPI_Request> requests, Clock::time_point deadline, const std::string& what);
  void connect();

  const Communicator& trainers_;
  std::optional<Communicator> comm_;  // K-Reduce's own, made at the first exchange
  int size_ = 1;                      // W
  int rank_ = 0;
  int aggregators_ = 1;  // K
  bool stale_ = false;
  std::chrono::duration<double> timeout_;
  std::size_t gradient_size_ = 0;
  std::vector<GradientChunk> chunks_;  // K
  // This step's contribution while it is sent (the caller's buffer is reused at once).
  std::vector<float> outgoing_;
  std::vector<MPI_Request> outgoing_requests_;  // one per aggregator (null: this trainer's own)
  // Aggregator: the contributions of every trainer to its chunk (slot t for trainer t).
  std::vector<float> incoming_;
  std::vector<MPI_Request> incoming_requests_;
  // Aggregator: its merged chunk, in two buffers used in turn, so that a send of step s-1
  // still in flight (a stale non-aggregator may be busy computing) never holds up step s.
  std::array<std::vector<float>, 2> merged_;
  std::array<std::vector<MPI_Request>, 2> merged_sends_;
  int turn_ = 0;
  // Receives of the merged chunks: into the caller's buffer (synchronous), or into owed_ (a
  // stale non-aggregator, applied at its next exchange or drain).
  std::vector<MPI_Request> merged_receives_;
  std::vector<float> owed_;
  std::vector<MPI_Request> owed_receives_;
  bool owed_pending_ = false;
  std::vector<int> completed_;  // MPI_Testsome's output
  // Texts for timeout errors, made once.
  std::vector<std::string> contribution_what_;  // per trainer
  std::vector<std::string> merged_what_;        // per aggregator
  std::string send_what_;
};

}  // namespace conflux::comm
