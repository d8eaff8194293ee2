#pragma once
/// @file local_producer.hpp
/// A trainer's own preprocessing, run ahead of the training loop on a background thread so
/// that building batch k+1 overlaps the compute step of batch k. Only this thread and its
/// pool touch the batches it was given until they are reported built; it never calls MPI.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_set>
#include <utility>

#include "conflux/data/pipeline/batch.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/data/pipeline/sample_fetcher.hpp"
#include "conflux/telemetry/timeline.hpp"

namespace conflux::data {

/// How a LocalProducer builds.
struct ProducerOptions {
  int threads = 1;                     ///< preprocessing threads
  std::uint64_t seed = 0;              ///< run.seed
  SampleDecoding decoding;             ///< channels, on_corrupt
  std::size_t cache_bytes = 64 << 20;  ///< read-ahead bound (data.cache_mb)
  /// Build the 8-bit images into Batch::pixels (the transform must make pixels) rather than
  /// normalised floats into Batch::images.
  bool pixels = false;
  telemetry::Timeline* timeline = nullptr;  ///< records each batch built; null: none
};

/// Builds batches in submission order (urgent ones first) on one background thread that
/// drives a BatchBuilder of `threads` threads.
class LocalProducer {
 public:
  /// `source` and `transform` must outlive the producer. A streamed source's samples are read
  /// ahead within `cache_bytes` (data.cache_mb) from the moment a batch is submitted.
  LocalProducer(const SampleSource& source, const SampleTransform& transform,
                const ProducerOptions& options);
  /// Stops the thread after the batch it is building.
  ~LocalProducer();
  LocalProducer(const LocalProducer&) = delete;
  LocalProducer& operator=(const LocalProducer&) = delete;

  /// Queues `batch` (epoch and step set, `samples` its dataset indices) to be built; urgent
  /// batches go ahead of the queue. `batch` must stay in place until built.
  void submit(Batch& batch, std::span<const std::uint32_t> samples, bool urgent);
  /// Whether `batch` has been built; rethrows a build failure.
  bool built(const Batch& batch);
  /// Waits until `batch` is built or `timeout` passes; returns built(batch).
  bool wait(const Batch& batch, std::chrono::microseconds timeout);
  /// Forgets a built batch (before its memory is reused).
  void release(const Batch& batch);
  /// Batches built so far and the wall time their builds took (for the profiler).
  std::pair<std::uint64_t, double> built_and_seconds() const;
  /// The read-ahead's figures (zero for an in-memory source).
  FetcherStats fetcher_stats() const;
  /// Samples skipped as corrupt.
  std::uint64_t skipped() const noexcept { return builder_.skipped(); }

 private:
  struct Job {
    Batch* batch;
    std::vector<std::uint32_t> samples;
    std::optional<std::uint64_t> ticket;  // its read-ahead, for a streamed source
  };
  void run();
  void build(Job& job);
  BatchBuilder builder_;
  std::optional<SampleFetcher> fetcher_;
  std::uint64_t seed_;
  bool pixels_;
  telemetry::Timeline* timeline_;
  mutable std::mutex mutex_;
  std::uint64_t built_ = 0;
  double build_seconds_ = 0;
  std::condition_variable wake_, done_cv_;
  std::deque<Job> queue_;
  std::unordered_set<const Batch*> done_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace conflux::data
