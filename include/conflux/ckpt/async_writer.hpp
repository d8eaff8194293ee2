#pragma once
/// @file async_writer.hpp
/// CheckFreq-style two-phase checkpointing: the training loop only copies its state into a
/// TrainingState (the snapshot); a background thread persists it, so the loop stalls for a
/// memory copy, not for the file system.

#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "conflux/ckpt/checkpoint_store.hpp"

namespace conflux::ckpt {

/// Totals of the persisted checkpoints.
struct PersistStats {
  std::size_t written = 0;   ///< checkpoints published
  std::uint64_t bytes = 0;   ///< their total file size
  double write_seconds = 0;  ///< total time writing them (background)
  double max_write_seconds = 0;
  double wait_seconds = 0;  ///< time submit() waited for the previous write (stall)
};

/// Persists snapshots on one background thread, one at a time.
class AsyncCheckpointWriter {
 public:
  /// Writer into `store`; `previous` is the checkpoint the run resumed from (named in errors).
  AsyncCheckpointWriter(CheckpointStore store, std::filesystem::path previous = {});
  /// Waits for the write in progress (its error, if any, is dropped: call flush() first).
  ~AsyncCheckpointWriter();
  AsyncCheckpointWriter(const AsyncCheckpointWriter&) = delete;
  AsyncCheckpointWriter& operator=(const AsyncCheckpointWriter&) = delete;

  /// Waits for the previous write to finish and returns a state object whose buffers can be
  /// reused for the next snapshot (avoids reallocating the model copy each time).
  TrainingState take_buffer();
  /// Starts persisting `state` in the background; waits first if a write is still running.
  void submit(TrainingState state);
  /// Waits until every submitted snapshot is durable; RuntimeError for a failed write.
  void flush();
  /// True once a write has failed (non-blocking).
  bool failed() const;
  /// The failure, "" when none.
  std::string error() const;
  /// The newest published checkpoint file (empty before the first).
  std::filesystem::path last_published() const;
  /// Totals so far.
  PersistStats stats() const;
  /// The store written to.
  const CheckpointStore& store() const noexcept { return store_; }

 private:
  void run();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  CheckpointStore store_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<TrainingState> pending_;  // submitted, not yet written
  TrainingState spare_;                   // the last written snapshot, for reuse
  bool busy_ = false;
  bool stopping_ = false;
  std::string error_;
  std::filesystem::path last_published_;
  PersistStats stats_;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace conflux::ckpt
