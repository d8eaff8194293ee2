// Reading a run's timeline (Chrome trace events, docs/profiling.md "The timeline") for the
// report: the offload decisions and the checkpoint stalls, streamed event by event so that a
// timeline of a million events costs its text and not a tree of it.

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "conflux/core/error.hpp"
#include "conflux/core/json_reader.hpp"
#include "conflux/report/run_records.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::report {

namespace run_files = train::run_files;

namespace fs = std::filesystem;

namespace {

// What one pass over the events keeps, before it is known which processes are trainers.
struct Scan {
  std::map<int, std::string> processes;                // pid -> process name
  std::map<std::pair<int, int>, std::string> threads;  // (pid, tid) -> thread name
  struct Span {
    int pid, tid;
    std::string name;
    double ts_s, ms, step;
  };
  std::vector<Span> checkpoint_spans;
  std::vector<Decision> decisions;  // trainer = pid until resolved
  std::map<int, double> first_window_end;
};

void scan_event(Scan& scan, const JsonValue& e) {
  const std::string ph = e.string_or("ph", "");
  const std::string name = e.string_or("name", "");
  const int pid = static_cast<int>(e.number_or("pid", -1));
  const int tid = static_cast<int>(e.number_or("tid", -1));
  const double ts_s = e.number_or("ts", 0) / 1e6;
  const JsonValue* args = e.find("args");
  const JsonValue none;
  const JsonValue& a = args != nullptr ? *args : none;
  if (ph == "M" && name == "process_name") {
    scan.processes[pid] = a.string_or("name", "");
  } else if (ph == "M" && name == "thread_name") {
    scan.threads[{pid, tid}] = a.string_or("name", "");
  } else if (ph == "X" && e.string_or("cat", "") == "checkpoint") {
    scan.checkpoint_spans.push_back(
        {pid, tid, name, ts_s, e.number_or("dur", 0) / 1e3, a.number_or("global_step", -1)});
  } else if (ph == "i" && name == "offload decision") {
    scan.decisions.push_back({.trainer = pid,
                              .t_s = ts_s,
                              .from = a.number_or("from", 0),
                              .to = a.number_or("to", 0),
                              .reason = a.string_or("reason", "")});
  } else if (ph == "C" && name == "steps per s" && !scan.first_window_end.count(pid)) {
    scan.first_window_end[pid] = ts_s;
  }
}

// Streams one trace file into `scan`; a file that ends early is noted with what was read from
// it. A per-rank stream (`streamed`) is rewritten in place at every flush, and a kill during
// that write can leave new events cut off by the old closing text (docs/watching.md, "The
// streamed timeline"): what precedes the damage is kept, as for a cut end. The merged
// timeline.json is published atomically, so damage there is an error.
void scan_file(Scan& scan, const fs::path& path, const std::string& shown, bool streamed,
               std::vector<std::string>& notes) {
  std::ifstream in(path, std::ios::binary);
  CONFLUX_REQUIRE(in.good(), "{}: cannot read this file of the run directory", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  std::size_t events = 0;
  try {
    scan_json_array(text.str(), "traceEvents", path.string(), [&](JsonValue&& e) {
      ++events;
      if (e.is_object()) scan_event(scan, e);
    });
  } catch (const JsonSyntaxError& e) {
    if (e.truncated()) {
      notes.push_back(fmt::format(
          "{} ends early (still being written, or cut by a kill): read its first {} events", shown,
          events));
    } else if (streamed) {
      notes.push_back(fmt::format(
          "{} is damaged after its first {} events (a flush cut by a kill?): {}; those events "
          "were read",
          shown, events, e.what()));
    } else {
      throw;
    }
  }
}

// The trainer index of a process named "trainer T (rank R)"; -1 for any other process.
int trainer_of(const std::string& process) {
  int trainer = -1;
  if (std::sscanf(process.c_str(), "trainer %d", &trainer) != 1) return -1;
  return trainer;
}

// The files to read: timeline.json (merged at the end of a run), else the per-rank files a
// running job streams. Paths relative to `dir`.
std::vector<std::string> timeline_files(const fs::path& dir) {
  if (fs::exists(dir / run_files::kTimeline)) return {std::string(run_files::kTimeline)};
  std::vector<std::pair<int, std::string>> ranks;
  std::error_code ec;
  const std::regex pattern("rank-([0-9]+)\\.json");
  for (const auto& entry : fs::directory_iterator(dir / run_files::kTimelineStreams, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) ranks.emplace_back(std::stoi(m[1]), "timeline/" + name);
  }
  std::sort(ranks.begin(), ranks.end());
  std::vector<std::string> files;
  for (auto& [rank, name] : ranks) files.push_back(std::move(name));
  return files;
}

}  // namespace

TimelineRecords read_timeline_records(const fs::path& dir) {
  TimelineRecords out;
  out.files = timeline_files(dir);
  if (out.files.empty()) {
    out.notes.push_back(
        "timeline.json is missing (profile.timeline = false, or the run ended before writing "
        "it) and there is no timeline/rank-<r>.json: no checkpoint stalls");
    return out;
  }
  Scan scan;
  for (const std::string& file : out.files) {
    scan_file(scan, dir / file, file, file != run_files::kTimeline, out.notes);
  }
  const bool named = !scan.processes.empty();
  for (const auto& [pid, name] : scan.processes) {
    out.trainers += trainer_of(name) >= 0;
    out.workers += name.starts_with("worker");
  }
  // Without process names (a trace from elsewhere) every pid counts as a trainer.
  const auto trainer = [&](int pid) {
    const auto p = scan.processes.find(pid);
    return p != scan.processes.end() ? trainer_of(p->second) : named ? -1 : pid;
  };
  for (const Scan::Span& s : scan.checkpoint_spans) {
    const auto thread = scan.threads.find({s.pid, s.tid});
    // A checkpoint span off the main thread (a background write) stalls nothing.
    if (trainer(s.pid) < 0 || (thread != scan.threads.end() && thread->second != "main")) continue;
    out.stalls.push_back(
        {.trainer = trainer(s.pid), .name = s.name, .t_s = s.ts_s, .ms = s.ms, .step = s.step});
  }
  for (Decision d : scan.decisions) {
    d.trainer = trainer(d.trainer);
    if (d.trainer >= 0) out.decisions.push_back(d);
  }
  for (const auto& [pid, t] : scan.first_window_end) {
    if (trainer(pid) >= 0) out.first_window_end[trainer(pid)] = t;
  }
  return out;
}

}  // namespace conflux::report
