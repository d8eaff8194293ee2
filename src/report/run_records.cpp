#include "conflux/report/run_records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <sstream>

#include "conflux/core/error.hpp"
#include "conflux/core/json_reader.hpp"
#include "conflux/core/toml_file.hpp"
#include "conflux/telemetry/run_record_io.hpp"
#include "conflux/train/run_files.hpp"

namespace conflux::report {

namespace run_files = train::run_files;

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  CONFLUX_REQUIRE(in.good(), "{}: cannot read this file of the run directory", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  CONFLUX_REQUIRE(!in.bad(), "{}: read error", path.string());
  return text.str();
}

// Calls `on_line(object, "path:N")` for every line of a JSON Lines file. A last line that
// ends early (a writer killed mid-line) is noted and skipped; any other bad line is an
// InputError naming the file and line.
void read_jsonl(const fs::path& path, std::vector<std::string>& notes,
                const std::function<void(const JsonValue&, const std::string&)>& on_line) {
  const std::string text = read_text(path);
  std::size_t start = 0;
  for (std::size_t number = 1; start < text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string_view line = std::string_view(text).substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", path.string(), number);
    JsonValue value;
    try {
      value = parse_json(line, where);
    } catch (const JsonSyntaxError& e) {
      if (!(last && e.truncated())) throw;
      notes.push_back(fmt::format(
          "{}: the last line ({}) is incomplete, as a run cut while writing leaves it; ignored",
          path.filename().string(), number));
      continue;
    }
    CONFLUX_REQUIRE(value.is_object(), "{}: expected a JSON object per line, found {}", where,
                    value.type_name());
    on_line(value, where);
  }
}

// Every plain value of a config table as "section.key" -> its TOML text (strings unquoted);
// tables in arrays (model.layers) are left out.
std::map<std::string, std::string> config_values(const toml::table& config) {
  std::map<std::string, std::string> out;
  for (const auto& [section, node] : config) {
    const toml::table* table = node.as_table();
    if (table == nullptr) continue;
    for (const auto& [key, value] : *table) {
      const std::string path = fmt::format("{}.{}", section.str(), key.str());
      if (const auto* text = value.as_string()) {
        out[path] = text->get();
      } else if (!value.is_table() && !value.is_array_of_tables()) {
        std::ostringstream printed;
        value.visit([&](const auto& v) { printed << v; });
        out[path] = printed.str();
      }
    }
  }
  return out;
}

void read_summary(RunRecords& r) {
  const fs::path path = r.dir / run_files::kSummary;
  if (!fs::exists(path)) {
    r.notes.push_back(
        "summary.json is missing: the run has not finished (it is still going, or was stopped "
        "or killed), so there is no digest or final accuracy");
    return;
  }
  const JsonValue v = parse_json(read_text(path), path.string());
  CONFLUX_REQUIRE(v.is_object(), "{}: expected a JSON object, found {}", path.string(),
                  v.type_name());
  r.summary = RunSummary{.name = v.string_or("name", ""),
                         .digest = v.string_or("digest", ""),
                         .final_test_accuracy = v.number_or("final_test_accuracy", kNaN),
                         .epochs = v.number_or("epochs", kNaN),
                         .total_seconds = v.number_or("total_seconds", kNaN),
                         .parameters = v.number_or("parameters", kNaN)};
  r.files.emplace_back(run_files::kSummary);
}

void read_metrics(RunRecords& r) {
  const fs::path path = r.dir / run_files::kMetrics;
  if (!fs::exists(path)) {
    r.notes.push_back("metrics.jsonl is missing: no epoch finished, so no per-epoch curves");
    return;
  }
  read_jsonl(path, r.notes, [&](const JsonValue& l, const std::string& where) {
    telemetry::read_record(l, where, r.epochs.emplace_back());
  });
  r.files.emplace_back(run_files::kMetrics);
}

void read_steps(RunRecords& r) {
  const fs::path path = r.dir / run_files::kSteps;
  if (!fs::exists(path)) {
    r.notes.push_back(
        "steps.jsonl is missing (a run from before it existed, or train.log_every = 0 and no "
        "epoch finished): loss, accuracy and samples/s are drawn per epoch only");
    return;
  }
  read_jsonl(path, r.notes, [&](const JsonValue& l, const std::string& where) {
    telemetry::read_record(l, where, r.steps.emplace_back());
  });
  r.files.emplace_back(run_files::kSteps);
}

// The trainers that wrote `<prefix><t>.jsonl`, in order.
std::vector<int> trainer_files(const fs::path& dir, std::string_view prefix) {
  std::vector<int> trainers;
  const std::regex pattern(std::string(prefix) + "([0-9]+)\\.jsonl");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) trainers.push_back(std::stoi(m[1]));
  }
  std::sort(trainers.begin(), trainers.end());
  return trainers;
}

// Each process of a resumed run starts its profile clock at 0 again and appends to the same
// file: a window that starts before the previous one begins a new segment, which is laid after
// the previous segment's end. Returns the offset of each segment.
std::vector<double> read_profile(RunRecords& r, int trainer) {
  const std::string name = run_files::profile(trainer);
  std::vector<double> offsets{0};
  double last_start = -1, last_end = 0;
  auto& windows = r.profiles[trainer];
  read_jsonl(r.dir / name, r.notes, [&](const JsonValue& l, const std::string& where) {
    ProfileWindow w;
    w.window_s = 0;  // a line without it is a point in time
    telemetry::read_record(l, where, w);
    if (w.t_s < last_start) offsets.push_back(last_end);
    last_start = w.t_s;
    w.t_s += offsets.back();
    last_end = w.t_s + w.window_s;
    windows.push_back(std::move(w));
  });
  if (offsets.size() > 1) {
    r.notes.push_back(fmt::format(
        "{}: {} segments (the run was resumed); each restarts the trainer's clock, so they are "
        "drawn end to end and the time between them is left out",
        name, offsets.size()));
  }
  r.files.push_back(name);
  return offsets;
}

void read_decisions(RunRecords& r, int trainer, const std::vector<double>& offsets) {
  const std::string name = run_files::decisions(trainer);
  std::size_t segment = 0;
  double last = -1;
  read_jsonl(r.dir / name, r.notes, [&](const JsonValue& l, const std::string& where) {
    telemetry::DecisionRecord d;
    d.trainer = trainer;  // a line without it is the file's trainer's
    telemetry::read_record(l, where, d);
    if (d.t_s < last && segment + 1 < offsets.size()) ++segment;  // a resumed process's clock
    last = d.t_s;
    r.decisions.push_back({.trainer = d.trainer,
                           .step = static_cast<double>(d.step),
                           .t_s = d.t_s + offsets[segment],
                           .from = d.from,
                           .to = d.to,
                           .reason = std::move(d.reason)});
  });
  r.files.push_back(name);
}

// Profiles and decisions per trainer.
std::map<int, std::vector<double>> read_trainer_files(RunRecords& r) {
  std::map<int, std::vector<double>> offsets;
  for (const int t : trainer_files(r.dir, run_files::kProfilePrefix))
    offsets[t] = read_profile(r, t);
  if (offsets.empty()) {
    r.notes.push_back(
        "no profile-trainer<t>.jsonl (profile.enabled = false, or no window closed yet): no "
        "data-wait or offload-ratio curves");
  }
  const std::vector<int> with_decisions = trainer_files(r.dir, run_files::kDecisionsPrefix);
  for (const int t : with_decisions) {
    read_decisions(r, t, offsets.count(t) ? offsets[t] : std::vector<double>{0});
  }
  return offsets;
}

// The timeline's clock starts at the run's earliest event; each trainer's profile clock at its
// monitor's start. Its first "steps per s" counter is written when its first profile window
// closes, which gives the shift from one to the other (of the last segment: the timeline is
// that of the last process).
void merge_timeline(RunRecords& r, const TimelineRecords& tl,
                    const std::map<int, std::vector<double>>& offsets, bool have_decisions) {
  std::map<int, double> shift;  // timeline seconds - profile seconds
  for (const auto& [trainer, first_end] : tl.first_window_end) {
    const auto& windows = r.profiles[trainer];
    const auto seg = offsets.find(trainer);
    if (windows.empty() || seg == offsets.end()) continue;
    const double segment_start = seg->second.back();
    for (const ProfileWindow& w : windows) {
      if (w.t_s >= segment_start) {
        shift[trainer] = first_end - (w.t_s + w.window_s);
        break;
      }
    }
  }
  if (!tl.files.empty()) {
    r.timeline_clock = shift.empty() ? "timeline clock" : "aligned to the trainers' profile clock";
  }
  const auto to_profile = [&](int trainer, double t) {
    const auto s = shift.count(trainer) ? shift.find(trainer) : shift.find(0);
    return s == shift.end() ? t : t - s->second;
  };
  for (CheckpointStall stall : tl.stalls) {
    stall.t_s = to_profile(stall.trainer, stall.t_s);
    r.stalls.push_back(stall);
  }
  if (!have_decisions && !tl.decisions.empty()) {
    r.notes.push_back(
        "no decisions-trainer<t>.jsonl: the offload decisions come from the timeline (without "
        "their steps)");
    for (Decision d : tl.decisions) {
      d.t_s = to_profile(d.trainer, d.t_s);
      r.decisions.push_back(d);
    }
  }
  r.timeline_trainers = tl.trainers;
  r.timeline_workers = tl.workers;
  r.files.insert(r.files.end(), tl.files.begin(), tl.files.end());
  r.notes.insert(r.notes.end(), tl.notes.begin(), tl.notes.end());
}

}  // namespace

RunRecords read_run_records(const fs::path& dir) {
  std::error_code ec;
  CONFLUX_REQUIRE(fs::exists(dir, ec), "{}: no such run directory", dir.string());
  CONFLUX_REQUIRE(fs::is_directory(dir, ec), "{}: not a directory (expected a run directory)",
                  dir.string());
  fs::directory_iterator probe(dir, ec);
  CONFLUX_REQUIRE(!ec, "{}: cannot read the run directory: {}", dir.string(), ec.message());
  RunRecords r;
  r.dir = dir;
  if (fs::exists(dir / run_files::kConfig)) {
    r.config_text = read_text(dir / run_files::kConfig);
    r.config_values = config_values(parse_toml_file(dir / run_files::kConfig));
    r.files.emplace_back(run_files::kConfig);
  } else {
    r.notes.push_back("config.toml is missing: no settings to show");
  }
  read_summary(r);
  read_metrics(r);
  read_steps(r);
  const auto offsets = read_trainer_files(r);
  const bool have_decisions = !r.decisions.empty();
  merge_timeline(r, read_timeline_records(dir), offsets, have_decisions);
  // One order for the plot's numbers and the page's table.
  std::stable_sort(r.decisions.begin(), r.decisions.end(),
                   [](const Decision& a, const Decision& b) { return a.t_s < b.t_s; });
  return r;
}

}  // namespace conflux::report
