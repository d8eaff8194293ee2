#pragma once
/// @file run_records.hpp
/// What a run directory records, read back for `conflux report`: summary.json, config.toml,
/// metrics.jsonl, steps.jsonl, profile-trainer<t>.jsonl, decisions-trainer<t>.jsonl and the
/// timeline (timeline.json, else timeline/rank-<r>.json). A run that is still going, was
/// killed or never wrote some file is read as far as it goes: what is missing or cut short is
/// listed in `notes`, in words. The JSON Lines records are read through their field lists
/// (telemetry/run_record.hpp), the ones their writers use.

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conflux/telemetry/run_record.hpp"

namespace conflux::report {

/// One metrics.jsonl line: an epoch (numbers conflux wrote as null are NaN).
using EpochRecord = telemetry::EpochRecord;

/// One steps.jsonl line: rank 0's report every train.log_every steps and at each epoch's end.
using StepRecord = telemetry::StepRecord;

/// One profile-trainer<t>.jsonl line: a measuring window of one trainer, with its t_s on the
/// trainer's profile clock stitched across resumes (read_run_records()).
using ProfileWindow = telemetry::WindowRecord;

/// An offload controller's decision (decisions-trainer<t>.jsonl, or a timeline instant).
struct Decision {
  int trainer = 0;
  double step = -1;  ///< global step; -1 when unknown (from the timeline)
  double t_s = 0;    ///< on the trainer's profile clock
  double from = 0, to = 0;
  std::string reason{};
};

/// A checkpoint span on a trainer's main thread: the time training stood still for it.
struct CheckpointStall {
  int trainer = 0;
  std::string name{};  ///< the span's name, e.g. "checkpoint capture"
  double t_s = 0;      ///< start, on the report's time axis (see RunRecords::timeline_clock)
  double ms = 0;       ///< duration
  double step = -1;    ///< its "global_step" argument; -1 when absent
};

/// The timeline's part of a run: decisions and checkpoint stalls.
struct TimelineRecords {
  std::vector<std::string> files;  ///< what was read, relative to the run directory
  std::vector<Decision> decisions;
  std::vector<CheckpointStall> stalls;
  std::size_t trainers = 0;  ///< processes named "trainer ..."
  std::size_t workers = 0;   ///< processes named "worker ..."
  /// Per trainer: the time of its first "steps per s" counter (seconds, timeline clock), the
  /// moment its first profile window closed, which aligns the two clocks.
  std::map<int, double> first_window_end;
  std::vector<std::string> notes;
};

/// summary.json: written when training finished.
struct RunSummary {
  std::string name{}, digest{};
  double final_test_accuracy = 0, epochs = 0, total_seconds = 0, parameters = 0;
};

/// Everything read from a run directory.
struct RunRecords {
  std::filesystem::path dir;
  std::optional<RunSummary> summary;
  std::string config_text;  ///< config.toml as written; empty when missing
  /// config.toml's plain values, "section.key" -> TOML text (strings without quotes).
  std::map<std::string, std::string> config_values;
  std::vector<EpochRecord> epochs;
  std::vector<StepRecord> steps;
  std::map<int, std::vector<ProfileWindow>> profiles;  ///< by trainer
  std::vector<Decision> decisions;
  std::vector<CheckpointStall> stalls;
  std::size_t timeline_trainers = 0, timeline_workers = 0;
  /// How stall times were put on the profile clock, in words (for the plot's label).
  std::string timeline_clock;
  std::vector<std::string> files;  ///< the files read, relative to dir
  std::vector<std::string> notes;  ///< what is missing, partial or approximate
};

/// Reads `dir`. InputError (exit 2) naming the path when it is not a readable directory, and
/// naming file and line when a file that exists is unreadable or malformed (a last line cut
/// by a kill is only noted). Missing files are noted, never an error.
RunRecords read_run_records(const std::filesystem::path& dir);

/// Reads the timeline of `dir` (timeline.json, else timeline/rank-<r>.json); empty with a
/// note when there is none. Exposed for the tests.
TimelineRecords read_timeline_records(const std::filesystem::path& dir);

}  // namespace conflux::report
