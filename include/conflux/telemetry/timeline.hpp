#pragma once
/// @file timeline.hpp
/// A per-run timeline in Chrome trace / Perfetto JSON ("Trace Event Format"): every rank
/// records spans and instants from any of its threads into memory and, while the run goes,
/// streams them to a file of its own; at the end all ranks' events are merged on rank 0
/// (clocks aligned to rank 0's) into one file with one process per rank and one track per
/// thread, which chrome://tracing and ui.perfetto.dev open.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "conflux/comm/communicator.hpp"
#include "conflux/core/elapsed.hpp"

namespace conflux::telemetry {

/// Settings of a Timeline.
struct TimelineOptions {
  bool enabled = true;              ///< false: every call is a cheap no-op
  std::string process_name = {};    ///< this rank's track group, e.g. "trainer 0 (rank 0)"
  std::size_t max_events = 500000;  ///< later events are counted as dropped, not stored
};

/// The events of one rank. Thread-safe: any thread may record.
class Timeline {
 public:
  explicit Timeline(TimelineOptions options);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Whether events are recorded.
  bool enabled() const noexcept;
  /// Names the calling thread's track (e.g. "main", "preprocess 1"); unnamed threads get
  /// "thread N".
  void name_thread(std::string_view name);
  /// A complete event [start, end) on the calling thread's track. `args_json` is empty or a
  /// JSON object, e.g. {"step": 12}; other text is written as {"text": "<args_json>"}.
  void span(std::string_view name, std::string_view category, SteadyClock::time_point start,
            SteadyClock::time_point end, std::string_view args_json = {});
  /// An instant event now on the calling thread's track (e.g. a controller decision).
  void instant(std::string_view name, std::string_view category, std::string_view args_json = {});
  /// A value of the counter `name` now (drawn as a graph on this rank, e.g. "offload ratio").
  void counter(std::string_view name, double value);
  /// Events recorded so far (not counting dropped ones).
  std::size_t size() const;
  /// Events dropped because max_events was reached.
  std::size_t dropped() const;

  /// Collective over `comm` (every rank calls it, enabled or not): from now on an enabled
  /// rank appends its events to `path` every `flush_interval_s` seconds from a thread of its
  /// own, as a Chrome trace of its own (pid = its rank in `comm`) that is a complete JSON
  /// document after every flush, so that a crash loses at most one interval. Timestamps are
  /// aligned to rank `root`'s clock and count from this call. Error when `path` cannot be made.
  void start_stream(const comm::Communicator& comm, const std::filesystem::path& path,
                    double flush_interval_s, int root = 0);
  /// Writes the events not streamed yet and stops the stream (the destructor does it too);
  /// Error when a write of the stream failed (streaming stopped there).
  void stop_stream();

  /// Collective over `comm` (every rank of the run calls it, enabled or not): merges all
  /// ranks' events, each rank's clock aligned to rank `root`'s by ping-pong offset estimation,
  /// and `root` writes the JSON file `path` atomically (only `root` uses `path`; no file when
  /// no rank is enabled). Returns the number of events written, metadata not counted (on
  /// `root`; 0 elsewhere). Events recorded while it runs may be left out.
  std::size_t write_merged(const comm::Communicator& comm, const std::filesystem::path& path,
                           int root = 0) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Records a span on `timeline` from construction to destruction (nothing when disabled).
/// `name` and `category` are viewed, not copied, so they must outlive it (string literals).
class ScopedSpan {
 public:
  ScopedSpan(Timeline& timeline, std::string_view name, std::string_view category)
      : timeline_(timeline),
        name_(name),
        category_(category),
        start_(timeline.enabled() ? SteadyClock::now() : SteadyClock::time_point{}) {}
  ~ScopedSpan() {
    if (timeline_.enabled()) timeline_.span(name_, category_, start_, SteadyClock::now());
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  Timeline& timeline_;
  std::string_view name_;
  std::string_view category_;
  SteadyClock::time_point start_;
};

}  // namespace conflux::telemetry
