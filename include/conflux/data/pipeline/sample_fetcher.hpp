#pragma once
/// @file sample_fetcher.hpp
/// Read-ahead of sample bytes (docs/datasets.md, "Streaming and memory bounds"). A rank knows
/// which samples its next batches hold (the epoch plan is fixed in advance), so as soon as a
/// batch is queued for building its samples are read, in queue order, on one I/O thread, while
/// the preprocessing threads build earlier batches. Bytes read and not yet built are bounded
/// by a budget (data.cache_mb); nothing is read twice or in vain: a batch taken before its
/// samples were all read gets the rest read by the taker, and a dropped batch stops its reads.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "conflux/data/io/sample_source.hpp"

namespace conflux::data {

/// The bytes of one batch's samples, in batch order.
using SampleBytes = std::vector<std::vector<std::uint8_t>>;

/// What a fetcher did (for the end-of-run memory report).
struct FetcherStats {
  std::uint64_t samples_read_ahead = 0;  ///< read by the I/O thread before they were needed
  std::uint64_t samples_read_late = 0;   ///< read by the builder itself (it was not ahead)
  std::uint64_t bytes_read = 0;          ///< all sample bytes read
  std::uint64_t peak_bytes_held = 0;     ///< most bytes read ahead and not yet taken
  std::uint64_t budget_bytes = 0;        ///< the bound (data.cache_mb)
};

/// Reads queued batches' samples ahead on one thread within a byte budget.
class SampleFetcher {
 public:
  /// `source` must outlive the fetcher. At least one sample is always read ahead, so a sample
  /// larger than the budget still flows.
  SampleFetcher(const SampleSource& source, std::size_t budget_bytes);
  /// Stops the I/O thread after the sample it is reading.
  ~SampleFetcher();
  SampleFetcher(const SampleFetcher&) = delete;
  SampleFetcher& operator=(const SampleFetcher&) = delete;

  /// Queues a batch's samples for reading ahead; returns its ticket.
  std::uint64_t enqueue(std::span<const std::uint32_t> samples);
  /// The bytes of ticket's samples: what was read ahead, the rest read now by the caller.
  /// Releases the ticket's share of the budget.
  SampleBytes take(std::uint64_t ticket);
  /// Forgets a ticket that will never be built (a cancelled request).
  void drop(std::uint64_t ticket);
  /// What was read so far.
  FetcherStats stats() const;

 private:
  struct Ticket {
    std::vector<std::uint32_t> samples;
    SampleBytes bytes;       // bytes[i] for i < next
    std::size_t next = 0;    // next sample the I/O thread reads
    std::size_t held = 0;    // bytes of this ticket counted in held_
    bool claimed = false;    // taken or dropped: the I/O thread leaves it
    bool in_flight = false;  // the I/O thread is reading its sample `next`
    bool failed = false;     // a read failed: the taker reads the rest (and reports it)
  };
  void run();
  Ticket* next_to_read();
  SampleBytes claim(std::uint64_t ticket);

  const SampleSource& source_;
  std::size_t budget_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, read_done_;
  std::map<std::uint64_t, Ticket> tickets_;
  std::uint64_t next_ticket_ = 0;
  std::size_t held_ = 0;
  FetcherStats stats_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once every member above exists
};

}  // namespace conflux::data
