// The merged timeline: every rank's events land in root's file, one process per rank and one
// track per thread, on one clock (events after a barrier never precede events before it).
#include "conflux/telemetry/timeline.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/temp_dir.hpp"

namespace conflux::telemetry {
namespace {

using testing::read_file;

// Skips the JSON string starting at text[i] == '"'; returns the index of its closing quote.
std::size_t skip_string(const std::string& text, std::size_t i) {
  for (++i; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\') ++i;
  }
  return i;
}

// The top-level objects of the "traceEvents" array, each as text.
std::vector<std::string> trace_events(const std::string& json) {
  std::vector<std::string> out;
  const std::string key = "\"traceEvents\":[";
  const auto at = json.find(key);
  if (at == std::string::npos) return out;
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = at + key.size(); i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      i = skip_string(json, i);
    } else if (c == '{') {
      if (depth++ == 0) begin = i;
    } else if (c == '}') {
      if (--depth == 0) out.push_back(json.substr(begin, i - begin + 1));
    } else if (c == ']' && depth == 0) {
      break;
    }
  }
  return out;
}

// The raw text of the value of `key` in the flat part of `object` (not inside "args"); empty
// when absent. Strings keep their quotes.
std::string field(const std::string& object, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  int depth = 0;
  for (std::size_t i = 0; i < object.size(); ++i) {
    const char c = object[i];
    if (c == '{') {
      ++depth;
    } else if (c == '}') {
      --depth;
    } else if (c == '"') {
      if (depth == 1 && object.compare(i, needle.size(), needle) == 0) {
        const std::size_t start = i + needle.size();
        std::size_t j = start;
        int nested = 0;
        for (; j < object.size(); ++j) {
          const char v = object[j];
          if (v == '"') {
            j = skip_string(object, j);
          } else if (v == '{' || v == '[') {
            ++nested;
          } else if ((v == '}' || v == ']') && nested-- == 0) {
            break;
          } else if (v == ',' && nested == 0) {
            break;
          }
        }
        return object.substr(start, j - start);
      }
      i = skip_string(object, i);
    }
  }
  return {};
}

// Runs Python's json parser on the file when python3 is installed; true when absent.
bool python_accepts(const std::filesystem::path& path) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) return true;
  const std::string command =
      fmt::format("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '{}'", path.string());
  return std::system(command.c_str()) == 0;
}

// Every rank: "before" spans on two threads, a barrier, then "after" spans on both threads,
// plus an instant and a counter on the main thread (6 events).
void record_around_barrier(Timeline& t, const comm::Communicator& world) {
  t.name_thread("main");
  std::promise<void> helper_ready;
  std::promise<void> barrier_passed;
  std::thread helper([&] {
    t.name_thread("helper");
    {
      ScopedSpan span(t, "before barrier", "test");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    helper_ready.set_value();
    barrier_passed.get_future().wait();
    ScopedSpan span(t, "after barrier", "test");
  });
  {
    ScopedSpan span(t, "before barrier", "test");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  helper_ready.get_future().wait();
  world.barrier();
  barrier_passed.set_value();
  {
    ScopedSpan span(t, "after barrier", "test");
    t.instant("decision", "control", fmt::format(R"({{"rank": {}}})", world.rank()));
    t.counter("rank", world.rank());
  }
  helper.join();
}

TEST(Timeline, MergesEveryRankOnRootOnOneClock) {
  const auto world = comm::Communicator::world();
  testing::TempDir dir;
  const auto path = dir.path() / "timeline.json";
  TimelineOptions options;
  options.process_name = fmt::format("test rank {}", world.rank());
  Timeline t(options);
  record_around_barrier(t, world);
  ASSERT_EQ(t.size(), 6u);

  const std::size_t written = t.write_merged(world, path);
  if (world.rank() != 0) {
    EXPECT_EQ(written, 0u);
    EXPECT_FALSE(std::filesystem::exists(path));
    return;
  }
  EXPECT_EQ(written, static_cast<std::size_t>(6 * world.size()));
  const std::string json = read_file(path);
  EXPECT_TRUE(python_accepts(path)) << json;
  EXPECT_NE(json.find(R"("displayTimeUnit":"ms")"), std::string::npos);
  EXPECT_NE(json.find(R"("otherData":{"dropped_events":0})"), std::string::npos);

  std::size_t complete = 0;
  for (auto at = json.find(R"("ph":"X")"); at != std::string::npos;
       at = json.find(R"("ph":"X")", at + 1)) {
    ++complete;
  }
  EXPECT_EQ(complete, static_cast<std::size_t>(4 * world.size()));

  const auto events = trace_events(json);
  double latest_before_end = 0;
  double earliest_after_start = std::numeric_limits<double>::max();
  std::vector<std::set<std::string>> tids(static_cast<std::size_t>(world.size()));
  std::vector<std::set<std::string>> thread_names(tids.size());
  std::vector<std::string> process_names(tids.size());
  std::vector<std::string> sort_index(tids.size());
  for (const auto& e : events) {
    const int pid = std::stoi(field(e, "pid"));
    ASSERT_GE(pid, 0);
    ASSERT_LT(pid, world.size());
    const auto p = static_cast<std::size_t>(pid);
    const std::string ph = field(e, "ph");
    const std::string name = field(e, "name");
    if (ph == R"("M")") {
      if (name == R"("process_name")") process_names[p] = e;
      if (name == R"("process_sort_index")") sort_index[p] = e;
      if (name == R"("thread_name")") thread_names[p].insert(e.substr(e.find(R"("args")")));
      continue;
    }
    const double ts = std::stod(field(e, "ts"));
    EXPECT_GE(ts, 0.0) << e;
    if (ph != R"("X")") continue;
    tids[p].insert(field(e, "tid"));
    const double dur = std::stod(field(e, "dur"));
    EXPECT_GE(dur, 0.0) << e;
    if (name == R"("before barrier")") latest_before_end = std::max(latest_before_end, ts + dur);
    if (name == R"("after barrier")") earliest_after_start = std::min(earliest_after_start, ts);
  }
  // Same host, same clock: the aligned clocks may only be off by the ping-pong error.
  EXPECT_LE(latest_before_end, earliest_after_start + 2000.0)
      << "a rank's event after the barrier precedes another's before it";
  for (std::size_t r = 0; r < tids.size(); ++r) {
    EXPECT_EQ(tids[r].size(), 2u) << "rank " << r << ": one track per thread";
    EXPECT_NE(process_names[r].find(fmt::format(R"("name":"test rank {}")", r)), std::string::npos)
        << "rank " << r;
    EXPECT_NE(sort_index[r].find(fmt::format(R"("sort_index":{})", r)), std::string::npos)
        << "rank " << r;
    EXPECT_EQ(thread_names[r],
              (std::set<std::string>{R"("args":{"name":"main"}})", R"("args":{"name":"helper"}})"}))
        << "rank " << r;
  }
}

// Odd ranks are disabled and the root is the last rank (disabled itself when the rank count is
// even): the file holds exactly the enabled ranks' events, with the dropped ones counted.
TEST(Timeline, DisabledRanksTakePartButContributeNothing) {
  const auto world = comm::Communicator::world();
  testing::TempDir dir;
  const auto path = dir.path() / "timeline.json";
  const int root = world.size() - 1;
  TimelineOptions options;
  options.enabled = world.rank() % 2 == 0;
  options.max_events = 2;
  Timeline t(options);
  for (int i = 0; i < 5; ++i) t.instant("tick", "test", R"({"i": 1})");
  const int enabled_ranks = (world.size() + 1) / 2;

  const std::size_t written = t.write_merged(world, path, root);
  if (world.rank() != root) {
    EXPECT_EQ(written, 0u);
    return;
  }
  EXPECT_EQ(written, static_cast<std::size_t>(2 * enabled_ranks));
  const std::string json = read_file(path);
  EXPECT_TRUE(python_accepts(path)) << json;
  EXPECT_NE(json.find(fmt::format(R"("otherData":{{"dropped_events":{}}})", 3 * enabled_ranks)),
            std::string::npos)
      << json;
  for (const auto& e : trace_events(json)) {
    const int pid = std::stoi(field(e, "pid"));
    EXPECT_EQ(pid % 2, 0) << "a disabled rank contributed: " << e;
    if (field(e, "name") == R"("process_name")") {
      EXPECT_NE(e.find(fmt::format(R"("name":"rank {}")", pid)), std::string::npos) << e;
    }
  }
}

TEST(Timeline, WritesNoFileWhenEveryRankIsDisabled) {
  const auto world = comm::Communicator::world();
  testing::TempDir dir;
  const auto path = dir.path() / "timeline.json";
  TimelineOptions options;
  options.enabled = false;
  Timeline t(options);
  t.instant("tick", "test");
  EXPECT_EQ(t.write_merged(world, path), 0u);
  EXPECT_FALSE(std::filesystem::exists(path));
}

// The events of a streamed file that are not metadata.
std::size_t streamed_events(const std::filesystem::path& path) {
  std::size_t n = 0;
  for (const auto& e : trace_events(read_file(path))) n += field(e, "ph") != R"("M")";
  return n;
}

TEST(Timeline, StreamsEachRankToAFileThatIsCompleteAfterEveryFlush) {
  const auto world = comm::Communicator::world();
  testing::TempDir dir;
  const auto path = dir.path() / fmt::format("rank-{}.json", world.rank());
  TimelineOptions options;
  options.process_name = fmt::format("test rank {}", world.rank());
  Timeline t(options);
  t.instant("before the stream", "test");
  t.start_stream(world, path, 0.02);
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_TRUE(python_accepts(path));
  for (int i = 0; i < 20; ++i) t.counter("i", i);
  // The flusher writes without being asked: wait for it (bounded), never calling stop_stream.
  for (int wait = 0; wait < 500 && streamed_events(path) < 21; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(streamed_events(path), 21u);
  EXPECT_TRUE(python_accepts(path)) << read_file(path);
  t.instant("last", "test");
  t.stop_stream();
  const std::string json = read_file(path);
  EXPECT_TRUE(python_accepts(path)) << json;
  EXPECT_EQ(streamed_events(path), t.size());
  EXPECT_NE(json.find(R"("origin_unix_s":)"), std::string::npos);
  for (const auto& e : trace_events(json)) EXPECT_EQ(std::stoi(field(e, "pid")), world.rank());
  t.stop_stream();  // twice is harmless
}

TEST(Timeline, DisabledRanksJoinTheStreamStartButWriteNothing) {
  const auto world = comm::Communicator::world();
  testing::TempDir dir;
  const auto path = dir.path() / "rank.json";
  TimelineOptions options;
  options.enabled = world.rank() % 2 == 0;
  Timeline t(options);
  t.start_stream(world, path, 0.05);
  t.instant("tick", "test");
  t.stop_stream();
  EXPECT_EQ(std::filesystem::exists(path), options.enabled);
}

}  // namespace
}  // namespace conflux::telemetry
