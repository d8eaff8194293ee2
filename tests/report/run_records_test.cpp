#include "conflux/report/run_records.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "../support/temp_dir.hpp"

namespace conflux::report {
namespace {

namespace fs = std::filesystem;
using testing::expect_input_error;
using testing::TempDir;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The lines the train area writes (src/train/run_recorder.cpp, offload/window_meter.cpp,
// train/pipeline_monitor.cpp), trimmed to what the report reads.
std::string steps_line(int step, int epoch, int epoch_step, double time_s, double loss) {
  return fmt::format(
      "{{\"step\": {}, \"epoch\": {}, \"epoch_step\": {}, \"steps_in_epoch\": 10, \"time_s\": {}, "
      "\"loss\": {}, \"accuracy\": 0.5, \"learning_rate\": 0.1, \"samples_per_s\": 1000, "
      "\"data_wait_ms\": 2, \"offload_ratio\": 0.25, \"eta_s\": 3}}\n",
      step, epoch, epoch_step, time_s, loss);
}

std::string profile_line(double t, double ratio) {
  return fmt::format(
      "{{\"trainer\": 0, \"t_s\": {}, \"window_s\": 0.5, \"first_step\": 0, \"steps\": 5, "
      "\"steps_per_s\": 10, \"data_wait_ms\": 1.5, \"offload_ratio\": {}, \"workers\": "
      "[{{\"worker\": 0}}, {{\"worker\": 1}}]}}\n",
      t, ratio);
}

constexpr const char* kTrace = R"json({"traceEvents":[
{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"trainer 0 (rank 0)"}},
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"worker 0 (rank 1)"}},
{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"main"}},
{"name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"checkpoint writer"}},
{"name":"steps per s","ph":"C","ts":2700000,"pid":0,"tid":0,"args":{"value":10}},
{"name":"steps per s","ph":"C","ts":3200000,"pid":0,"tid":0,"args":{"value":10}},
{"name":"checkpoint capture","cat":"checkpoint","ph":"X","ts":4000000,"dur":3500,"pid":0,"tid":0,"args":{"global_step": 20}},
{"name":"checkpoint write","cat":"checkpoint","ph":"X","ts":4000000,"dur":90000,"pid":0,"tid":2},
{"name":"build batch","cat":"data","ph":"X","ts":4000000,"dur":900,"pid":1,"tid":0},
{"name":"offload decision","cat":"profile","ph":"i","s":"t","ts":3200000,"pid":0,"tid":0,"args":{"from": 0, "to": 0.5, "reason": "start-up profile"}}
],
"displayTimeUnit":"ms",
"otherData":{"dropped_events":0}}
)json";

TEST(RunRecords, ReadsEveryFileOfARun) {
  TempDir dir;
  const fs::path& d = dir.path();
  write(d / "config.toml",
        "[run]\nname = \"demo\"\n[cluster]\ntrainers = 1\nworkers = 2\n"
        "[data]\noffload_ratio = \"auto\"\n[[model.layers]]\ntype = \"flatten\"\n");
  write(d / "summary.json", R"({"name": "demo", "digest": "abc123", "final_test_accuracy": 0.97, )"
                            R"("epochs": 2, "total_seconds": 12.5, "parameters": 100})"
                            "\n");
  write(d / "metrics.jsonl",
        R"({"epoch": 1, "train_loss": 0.5, "train_accuracy": 0.8, "test_loss": null, )"
        R"("test_accuracy": 0.9, "samples_per_s": 100, "epoch_seconds": 6, "elapsed_seconds": 6})"
        "\n");
  write(d / "steps.jsonl", steps_line(5, 1, 5, 1.0, 0.7) + steps_line(10, 1, 10, 2.0, 0.6));
  write(d / "profile-trainer0.jsonl", profile_line(0, 0) + profile_line(0.5, 0.5));
  write(d / "decisions-trainer0.jsonl",
        R"({"trainer": 0, "step": 10, "t_s": 1, "from": 0, "to": 0.5, "reason": "start-up"})"
        "\n");
  write(d / "timeline.json", kTrace);

  const RunRecords r = read_run_records(d);
  ASSERT_TRUE(r.summary);
  EXPECT_EQ(r.summary->digest, "abc123");
  EXPECT_EQ(r.config_values.at("cluster.workers"), "2");
  EXPECT_EQ(r.config_values.at("data.offload_ratio"), "auto");  // strings unquoted
  EXPECT_EQ(r.config_values.count("model.layers"), 0u);
  ASSERT_EQ(r.epochs.size(), 1u);
  EXPECT_TRUE(std::isnan(r.epochs[0].test_loss));  // null is "no number"
  EXPECT_EQ(r.epochs[0].test_accuracy, 0.9);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[1].step, 10);
  EXPECT_EQ(r.steps[1].loss, 0.6);
  ASSERT_EQ(r.profiles.at(0).size(), 2u);
  EXPECT_EQ(r.profiles.at(0)[1].offload_ratio, 0.5);
  EXPECT_EQ(r.profiles.at(0)[0].workers.size(), 2u);
  // The decisions file wins over the timeline's copy of the same decision.
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].step, 10);
  EXPECT_EQ(r.decisions[0].reason, "start-up");
  // Only the main thread's span stalls training; the writer thread's does not.
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].name, "checkpoint capture");
  EXPECT_DOUBLE_EQ(r.stalls[0].ms, 3.5);
  EXPECT_EQ(r.stalls[0].step, 20);
  // The first "steps per s" counter (2.7 s) is the first window's end (0.5 s): shift 2.2 s.
  EXPECT_NEAR(r.stalls[0].t_s, 4.0 - 2.2, 1e-9);
  EXPECT_EQ(r.timeline_clock, "aligned to the trainers' profile clock");
  EXPECT_EQ(r.timeline_trainers, 1u);
  EXPECT_EQ(r.timeline_workers, 1u);
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
}

TEST(RunRecords, TimelineDecisionsWhenThereIsNoDecisionsFile) {
  TempDir dir;
  write(dir.path() / "profile-trainer0.jsonl", profile_line(0, 0) + profile_line(0.5, 0.5));
  write(dir.path() / "timeline.json", kTrace);
  const RunRecords r = read_run_records(dir.path());
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].step, -1);
  EXPECT_NEAR(r.decisions[0].t_s, 3.2 - 2.2, 1e-9);  // on the profile clock
  EXPECT_EQ(r.decisions[0].to, 0.5);
}

TEST(RunRecords, AnEmptyDirectorySaysWhatIsMissing) {
  TempDir dir;
  const RunRecords r = read_run_records(dir.path());
  EXPECT_FALSE(r.summary);
  EXPECT_TRUE(r.epochs.empty() && r.steps.empty() && r.profiles.empty() && r.stalls.empty());
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  for (const char* file : {"config.toml", "summary.json", "metrics.jsonl", "steps.jsonl",
                           "profile-trainer", "timeline.json"}) {
    EXPECT_NE(notes.find(file), std::string::npos) << file << " not in\n" << notes;
  }
  EXPECT_TRUE(r.timeline_clock.empty());
}

TEST(RunRecords, AKilledRunsLastLineIsSkippedWithANote) {
  TempDir dir;
  write(dir.path() / "steps.jsonl", steps_line(5, 1, 5, 1.0, 0.7) + "{\"step\": 10, \"epo");
  const RunRecords r = read_run_records(dir.path());
  EXPECT_EQ(r.steps.size(), 1u);
  bool noted = false;
  for (const auto& n : r.notes)
    noted |= n.find("steps.jsonl: the last line (2) is incomplete") == 0;
  EXPECT_TRUE(noted);
}

TEST(RunRecords, MalformedFilesAreInputErrorsNamingFileAndLine) {
  TempDir dir;
  const fs::path bad = dir.path() / "metrics.jsonl";
  write(bad, "{\"epoch\": 1}\n{\"epoch\": 2,, }\n{\"epoch\": 3}\n");
  expect_input_error([&] { read_run_records(dir.path()); },
                     {bad.string() + ":2", "expected a member name"});
  write(bad, "{\"epoch\": 1}\n{\"epoch\": 2\n{\"epoch\": 3}\n");  // cut, but not the last line
  expect_input_error([&] { read_run_records(dir.path()); }, {bad.string() + ":2"});
  write(bad, "[1, 2]\n");
  expect_input_error([&] { read_run_records(dir.path()); },
                     {bad.string() + ":1", "expected a JSON object per line, found an array"});
  write(bad, "{\"train_loss\": 1}\n");
  expect_input_error([&] { read_run_records(dir.path()); },
                     {bad.string() + ":1", "expected a number at \"epoch\", found nothing"});
  fs::remove(bad);
  write(dir.path() / "summary.json", "{\"digest\": ");
  expect_input_error([&] { read_run_records(dir.path()); },
                     {(dir.path() / "summary.json").string(), "ends"});
}

TEST(RunRecords, AMissingOrWrongRunDirectoryIsAnInputError) {
  TempDir dir;
  expect_input_error([&] { read_run_records(dir.path() / "nope"); },
                     {(dir.path() / "nope").string(), "no such run directory"});
  write(dir.path() / "file", "x");
  expect_input_error([&] { read_run_records(dir.path() / "file"); }, {"not a directory"});
}

TEST(RunRecords, AResumedProfileIsLaidEndToEnd) {
  TempDir dir;
  // Two processes: the second restarts its clock at 0 and appends to the same files.
  write(dir.path() / "profile-trainer0.jsonl", profile_line(0, 0) + profile_line(0.5, 0.5) +
                                                   profile_line(0, 0.5) + profile_line(0.5, 0.6));
  write(dir.path() / "decisions-trainer0.jsonl",
        R"({"trainer": 0, "step": 3, "t_s": 1, "from": 0, "to": 0.5, "reason": "a"})"
        "\n"
        R"({"trainer": 0, "step": 30, "t_s": 0.5, "from": 0.5, "to": 0.6, "reason": "b"})"
        "\n");
  const RunRecords r = read_run_records(dir.path());
  const auto& w = r.profiles.at(0);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[2].t_s, 1.0);  // after the first segment's end (0.5 + 0.5)
  EXPECT_EQ(w[3].t_s, 1.5);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[0].t_s, 1.0);
  EXPECT_EQ(r.decisions[1].t_s, 1.5);  // the second process's 0.5 s, laid after the first
  bool noted = false;
  for (const auto& n : r.notes)
    noted |= n.find("2 segments (the run was resumed)") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(RunRecords, PerRankTimelinesOfARunningJob) {
  TempDir dir;
  // No timeline.json yet: the ranks' streamed files, one still being written.
  write(dir.path() / "timeline" / "rank-0.json",
        R"json({"traceEvents":[
{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"trainer 0 (rank 0)"}},
{"name":"checkpoint capture","cat":"checkpoint","ph":"X","ts":1000000,"dur":2000,"pid":0,"tid":0},
{"name":"checkpoint capture","cat":"checkpoint","ph":"X","ts":2000000,"dur":2500,"pid":0,"tid":0},
{"name":"checkpoint capture","cat":"checkpoint","ph":"X","ts":30)json");
  write(
      dir.path() / "timeline" / "rank-1.json",
      R"json({"traceEvents":[{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"worker 0 (rank 1)"}}]})json");
  const RunRecords r = read_run_records(dir.path());
  ASSERT_EQ(r.stalls.size(), 2u);
  EXPECT_EQ(r.stalls[1].ms, 2.5);
  EXPECT_EQ(r.timeline_workers, 1u);
  EXPECT_EQ(r.timeline_clock, "timeline clock");  // no profile to align with
  bool noted = false;
  for (const auto& n : r.notes) {
    noted |= n.find("timeline/rank-0.json ends early") == 0 &&
             n.find("first 3 events") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  EXPECT_EQ(r.files, (std::vector<std::string>{"timeline/rank-0.json", "timeline/rank-1.json"}));
}

TEST(RunRecords, AStreamCutByAKillKeepsItsEventsButTheMergedFileMustBeWhole) {
  TempDir dir;
  // A flush cut mid-write: new events end in the middle, followed by the old closing text.
  const std::string damaged = R"json({"traceEvents":[
{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"trainer 0 (rank 0)"}},
{"name":"checkpoint capture","cat":"checkpoint","ph":"X","ts":1000000,"dur":2000,"pid":0,"tid":0},
{"name":"checkpoint capture","cat":"checkp],
"displayTimeUnit":"ms"}
)json";
  write(dir.path() / "timeline" / "rank-0.json", damaged);
  const RunRecords r = read_run_records(dir.path());
  ASSERT_EQ(r.stalls.size(), 1u);
  bool noted = false;
  for (const auto& n : r.notes) {
    noted |= n.find("timeline/rank-0.json is damaged after its first 2 events") == 0;
  }
  EXPECT_TRUE(noted);
  write(dir.path() / "timeline.json", damaged);
  expect_input_error([&] { read_run_records(dir.path()); },
                     {(dir.path() / "timeline.json").string() + ": line 4"});
}

}  // namespace
}  // namespace conflux::report
