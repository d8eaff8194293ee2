#include "conflux/telemetry/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/json.hpp"

namespace conflux::telemetry {

namespace {

enum class Kind : std::uint8_t { kSpan, kInstant, kCounter };

// Names and categories are interned, so an event is a few integers plus its arguments, which
// are usually empty: half a million of them stay in tens of megabytes.
struct Event {
  std::int64_t start_ns = 0;  // steady clock, since its epoch
  std::int64_t duration_ns = 0;
  double value = 0.0;
  std::uint32_t name = 0;
  std::uint32_t category = 0;
  std::uint32_t track = 0;
  Kind kind = Kind::kSpan;
  std::string args;
};

// Lets the intern table be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept {
    return std::hash<std::string_view>{}(text);
  }
};

std::int64_t to_ns(SteadyClock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Keyed by a never-reused instance number rather than the Timeline's address, which a later
// Timeline may get again.
std::atomic<std::uint64_t> next_instance{1};
struct TrackCache {
  std::uint64_t instance = 0;
  std::uint32_t track = 0;
};
thread_local TrackCache track_cache;

// What write_merged serialises: a copy, so that recording goes on during the collectives.
struct Snapshot {
  std::vector<Event> events;
  std::vector<std::string> strings;
  std::vector<std::string> track_names;
  std::size_t dropped = 0;
};

// Microseconds with exactly three decimals, from integer nanoseconds (no rounding drift).
std::string microseconds(std::int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const std::uint64_t magnitude =
      ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, magnitude / 1000, magnitude % 1000);
}

// `args_json` is documented to be a JSON object; anything else is wrapped as a string so that a
// caller's mistake costs one event's arguments, not the validity of the whole file.
std::string args_object(std::string_view args) {
  const auto first = args.find_first_not_of(" \t\r\n");
  const auto last = args.find_last_not_of(" \t\r\n");
  if (first != std::string_view::npos && args[first] == '{' && args[last] == '}') {
    return std::string(args.substr(first, last - first + 1));
  }
  return fmt::format("{{\"text\":{}}}", json_string(args));
}

std::string process_metadata(int pid, const std::string& process_name) {
  return fmt::format(
      R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}},)"
      "\n"
      R"({{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
      pid, json_string(process_name.empty() ? fmt::format("rank {}", pid) : process_name), pid,
      pid);
}

std::string track_metadata(int pid, std::size_t track, const std::string& name) {
  return fmt::format(
      R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}},)"
      "\n"
      R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
      pid, track, json_string(name.empty() ? fmt::format("thread {}", track) : name), pid, track,
      track);
}

// Appends ",\n" and each event as a Trace Event Format object to `out`. `shift_ns` maps this
// rank's steady clock onto root's clock, relative to the run's origin.
void append_events(std::string& out, std::span<const Event> events,
                   const std::vector<std::string>& strings, int pid, std::int64_t shift_ns) {
  std::vector<std::string> quoted;
  quoted.reserve(strings.size());
  for (const auto& text : strings) quoted.push_back(json_string(text));
  out.reserve(out.size() + events.size() * 112);
  auto it = std::back_inserter(out);
  for (const Event& e : events) {
    const std::string ts = microseconds(e.start_ns + shift_ns);
    switch (e.kind) {
      case Kind::kSpan:
        fmt::format_to(it,
                       ",\n"
                       R"({{"name":{},"cat":{},"ph":"X","ts":{},"dur":{},"pid":{},"tid":{})",
                       quoted[e.name], quoted[e.category], ts, microseconds(e.duration_ns), pid,
                       e.track);
        break;
      case Kind::kInstant:
        fmt::format_to(it,
                       ",\n"
                       R"({{"name":{},"cat":{},"ph":"i","s":"t","ts":{},"pid":{},"tid":{})",
                       quoted[e.name], quoted[e.category], ts, pid, e.track);
        break;
      case Kind::kCounter:
        fmt::format_to(it,
                       ",\n"
                       R"({{"name":{},"ph":"C","ts":{},"pid":{},"tid":{},"args":{{"value":{}}})",
                       quoted[e.name], ts, pid, e.track, json_number(e.value));
        break;
    }
    if (!e.args.empty()) fmt::format_to(it, R"(,"args":{})", args_object(e.args));
    out += '}';
  }
}

// One rank's events and metadata as comma-separated Trace Event Format objects.
std::string fragment(const Snapshot& s, int pid, const std::string& process_name,
                     std::int64_t shift_ns) {
  std::string out = process_metadata(pid, process_name);
  for (std::size_t track = 0; track < s.track_names.size(); ++track) {
    out += ",\n" + track_metadata(pid, track, s.track_names[track]);
  }
  append_events(out, s.events, s.strings, pid, shift_ns);
  return out;
}

// NTP-style estimate of (root's clock - this rank's clock) in nanoseconds: the rank stamps t0,
// root answers with its clock, the rank stamps t1. With symmetric delays root's stamp lies at
// the midpoint, and the error is at most half the round trip, so the fastest of a few
// exchanges gives the best estimate (the first also pays for connection set-up and queueing).
std::int64_t clock_offset_ns(const comm::Communicator& comm, int root) {
  if (comm.size() == 1) return 0;
  // A private communicator: these messages cannot match, or be matched by, other traffic.
  const comm::Communicator ping = comm.split(0, comm.rank());
  constexpr int kExchanges = 8;
  constexpr int kTag = 1;
  if (ping.rank() == root) {
    for (int peer = 0; peer < ping.size(); ++peer) {
      if (peer == root) continue;
      for (int i = 0; i < kExchanges; ++i) {
        char token = 0;
        CONFLUX_MPI_CHECK(MPI_Recv(&token, 1, MPI_CHAR, peer, kTag, ping.get(), MPI_STATUS_IGNORE));
        const std::int64_t now = to_ns(SteadyClock::now());
        CONFLUX_MPI_CHECK(MPI_Send(&now, 1, MPI_INT64_T, peer, kTag, ping.get()));
      }
    }
    return 0;
  }
  std::int64_t best_round_trip = std::numeric_limits<std::int64_t>::max();
  std::int64_t offset = 0;
  for (int i = 0; i < kExchanges; ++i) {
    char token = 0;
    std::int64_t root_time = 0;
    const std::int64_t sent = to_ns(SteadyClock::now());
    CONFLUX_MPI_CHECK(MPI_Send(&token, 1, MPI_CHAR, root, kTag, ping.get()));
    CONFLUX_MPI_CHECK(
        MPI_Recv(&root_time, 1, MPI_INT64_T, root, kTag, ping.get(), MPI_STATUS_IGNORE));
    const std::int64_t round_trip = to_ns(SteadyClock::now()) - sent;
    if (round_trip < best_round_trip) {
      best_round_trip = round_trip;
      offset = root_time - (sent + round_trip / 2);
    }
  }
  return offset;
}

// Writes all of `text` at `offset`, or throws.
void write_at(int fd, std::string_view text, off_t offset, const std::filesystem::path& path) {
  while (!text.empty()) {
    const ssize_t n = ::pwrite(fd, text.data(), text.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    CONFLUX_CHECK(n > 0, "cannot write the timeline stream {}: {}", path.string(),
                  std::strerror(errno));
    text.remove_prefix(static_cast<std::size_t>(n));
    offset += n;
  }
}

// A rank's streamed copy of its events: a flusher thread appends the new ones every interval.
struct Stream {
  std::filesystem::path path;
  // The end of the file, rewritten by every flush, so that the file is a complete JSON
  // document after each one; it names the wall-clock time of ts = 0.
  std::string tail;
  int fd = -1;
  off_t end = 0;  // where the tail begins
  int pid = 0;
  std::int64_t shift_ns = 0;
  std::size_t streamed = 0;                // events written so far
  std::vector<std::string> written_names;  // track names as last written
  std::chrono::duration<double> interval{2.0};
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::string error;  // the first failure; streaming stops there
  std::thread flusher;
  ~Stream() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

struct Timeline::State {
  explicit State(TimelineOptions o) : options(std::move(o)) {}

  const TimelineOptions options;
  const std::uint64_t instance = next_instance.fetch_add(1, std::memory_order_relaxed);
  mutable std::mutex mutex;
  std::vector<Event> events;
  std::size_t dropped = 0;
  std::vector<std::string> strings;  // interned names and categories, by id
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> string_ids;
  std::unordered_map<std::thread::id, std::uint32_t> tracks;
  std::vector<std::string> track_names;  // by track; empty: unnamed

  // The calling thread's track, created on first use. Needs `mutex`. A thread that reuses an
  // exited thread's id continues that thread's track, which only merges two idle rows.
  std::uint32_t track_of_caller() {
    if (track_cache.instance == instance) return track_cache.track;
    const auto [it, inserted] = tracks.try_emplace(std::this_thread::get_id(),
                                                   static_cast<std::uint32_t>(track_names.size()));
    if (inserted) track_names.emplace_back();
    track_cache = {instance, it->second};
    return it->second;
  }

  // Needs `mutex`.
  std::uint32_t intern(std::string_view text) {
    if (const auto it = string_ids.find(text); it != string_ids.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(strings.size());
    strings.emplace_back(text);
    string_ids.emplace(strings.back(), id);
    return id;
  }

  void record(Kind kind, std::string_view name, std::string_view category, std::int64_t start_ns,
              std::int64_t duration_ns, double value, std::string_view args) {
    const std::lock_guard lock(mutex);
    const std::uint32_t track = track_of_caller();
    if (events.size() >= options.max_events) {
      ++dropped;
      return;
    }
    events.push_back(Event{start_ns, duration_ns, value, intern(name), intern(category), track,
                           kind, std::string(args)});
  }

  Snapshot snapshot() const {
    const std::lock_guard lock(mutex);
    return Snapshot{events, strings, track_names, dropped};
  }

  std::unique_ptr<Stream> stream;

  // Appends the events recorded since the last flush (and new or renamed tracks) to the stream.
  void flush_stream() {
    Stream& st = *stream;
    Snapshot fresh;
    {
      const std::lock_guard lock(mutex);
      fresh.events.assign(events.begin() + static_cast<std::ptrdiff_t>(st.streamed), events.end());
      st.streamed = events.size();
      fresh.strings = strings;
      fresh.track_names = track_names;
    }
    std::string body;
    for (std::size_t t = 0; t < fresh.track_names.size(); ++t) {
      if (t < st.written_names.size() && st.written_names[t] == fresh.track_names[t]) continue;
      body += ",\n" + track_metadata(st.pid, t, fresh.track_names[t]);
    }
    st.written_names = fresh.track_names;
    append_events(body, fresh.events, fresh.strings, st.pid, st.shift_ns);
    if (body.empty()) return;
    body += st.tail;
    // One pwrite over the old tail: the new events and the tail land together.
    write_at(st.fd, body, st.end, st.path);
    st.end += static_cast<off_t>(body.size() - st.tail.size());
  }

  void run_flusher() {
    Stream& st = *stream;
    std::unique_lock lock(st.mutex);
    while (!st.wake.wait_for(lock, st.interval, [&] { return st.stopping; })) {
      lock.unlock();
      try {
        flush_stream();
      } catch (const std::exception& e) {
        lock.lock();
        st.error = e.what();
        return;
      }
      lock.lock();
    }
  }
};

Timeline::Timeline(TimelineOptions options) : state_(std::make_unique<State>(std::move(options))) {}

Timeline::~Timeline() {
  try {
    stop_stream();
  } catch (...) {  // a destructor must not throw; stop_stream's caller hears of failures
  }
}

void Timeline::start_stream(const comm::Communicator& comm, const std::filesystem::path& path,
                            double flush_interval_s, int root) {
  const std::int64_t offset = clock_offset_ns(comm, root);
  const bool is_root = comm.rank() == root;
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  const std::int64_t origin = comm.allreduce_max(is_root ? to_ns(SteadyClock::now()) : kNone);
  const std::int64_t origin_unix_us =
      comm.allreduce_max(is_root ? std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count()
                                 : kNone);
  if (!enabled()) return;
  auto st = std::make_unique<Stream>();
  st->tail = fmt::format(
      "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{{\"origin_unix_s\":{}.{:06}}}}}\n",
      origin_unix_us / 1000000, origin_unix_us % 1000000);
  st->path = path;
  st->pid = comm.rank();
  st->shift_ns = offset - origin;
  st->interval = std::chrono::duration<double>(flush_interval_s);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  st->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CONFLUX_CHECK(st->fd >= 0, "cannot create the timeline stream {}: {}", path.string(),
                std::strerror(errno));
  const std::string head =
      "{\"traceEvents\":[\n" + process_metadata(st->pid, state_->options.process_name);
  write_at(st->fd, head + st->tail, 0, path);
  st->end = static_cast<off_t>(head.size());
  state_->stream = std::move(st);
  state_->stream->flusher = std::thread([this] { state_->run_flusher(); });
}

void Timeline::stop_stream() {
  Stream* st = state_->stream.get();
  if (st == nullptr || !st->flusher.joinable()) return;
  {
    const std::lock_guard lock(st->mutex);
    st->stopping = true;
  }
  st->wake.notify_all();
  st->flusher.join();
  CONFLUX_CHECK(st->error.empty(), "{}", st->error);
  state_->flush_stream();
}

bool Timeline::enabled() const noexcept {
  return state_->options.enabled;
}

void Timeline::name_thread(std::string_view name) {
  if (!enabled()) return;
  const std::lock_guard lock(state_->mutex);
  state_->track_names[state_->track_of_caller()] = std::string(name);
}

void Timeline::span(std::string_view name, std::string_view category, SteadyClock::time_point start,
                    SteadyClock::time_point end, std::string_view args_json) {
  if (!enabled()) return;
  // A reversed interval (clock misuse) becomes an empty span rather than a negative duration.
  const std::int64_t start_ns = to_ns(start);
  const std::int64_t duration_ns = std::max<std::int64_t>(0, to_ns(end) - start_ns);
  state_->record(Kind::kSpan, name, category, start_ns, duration_ns, 0.0, args_json);
}

void Timeline::instant(std::string_view name, std::string_view category,
                       std::string_view args_json) {
  if (!enabled()) return;
  state_->record(Kind::kInstant, name, category, to_ns(SteadyClock::now()), 0, 0.0, args_json);
}

void Timeline::counter(std::string_view name, double value) {
  if (!enabled()) return;
  state_->record(Kind::kCounter, name, {}, to_ns(SteadyClock::now()), 0, value, {});
}

std::size_t Timeline::size() const {
  const std::lock_guard lock(state_->mutex);
  return state_->events.size();
}

std::size_t Timeline::dropped() const {
  const std::lock_guard lock(state_->mutex);
  return state_->dropped;
}

std::size_t Timeline::write_merged(const comm::Communicator& comm,
                                   const std::filesystem::path& path, int root) const {
  CONFLUX_CHECK(root >= 0 && root < comm.size(), "timeline root {} is not a rank of {}", root,
                comm.size());
  const bool on = enabled();
  // Agreed first, so that every rank takes the same path through the collectives below.
  if (comm.allreduce_max(on ? 1 : 0) == 0) return 0;

  const Snapshot s = on ? state_->snapshot() : Snapshot{};
  const std::int64_t offset = clock_offset_ns(comm, root);
  std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
  for (const Event& e : s.events) earliest = std::min(earliest, e.start_ns + offset);
  const std::int64_t origin = comm.allreduce_min(earliest);
  // No events anywhere leaves origin at the sentinel; nothing is shifted by it then.
  const std::int64_t shift =
      origin == std::numeric_limits<std::int64_t>::max() ? 0 : offset - origin;

  const std::array<std::int64_t, 2> local = {static_cast<std::int64_t>(s.dropped),
                                             static_cast<std::int64_t>(s.events.size())};
  std::array<std::int64_t, 2> total = {0, 0};
  CONFLUX_MPI_CHECK(MPI_Reduce(local.data(), total.data(), static_cast<int>(local.size()),
                               MPI_INT64_T, MPI_SUM, root, comm.get()));
  const std::vector<std::string> fragments = comm.gather(
      on ? fragment(s, comm.rank(), state_->options.process_name, shift) : std::string(), root);
  if (comm.rank() != root) return 0;

  std::size_t bytes = 128;
  for (const auto& f : fragments) bytes += f.size() + 2;
  std::string text;
  text.reserve(bytes);
  text += "{\"traceEvents\":[\n";
  bool first = true;
  for (const auto& f : fragments) {
    if (f.empty()) continue;
    if (!first) text += ",\n";
    text += f;
    first = false;
  }
  text += fmt::format(
      "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{{\"dropped_events\":{}}}}}\n", total[0]);
  publish_text_file(path, text);
  return static_cast<std::size_t>(total[1]);
}

}  // namespace conflux::telemetry
