#pragma once
/// @file run_files.hpp
/// The names of the files in a run directory: written by train (and telemetry through it),
/// read by `conflux report` and the tests. docs/watching.md describes each.

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace conflux::train::run_files {

inline constexpr std::string_view kConfig = "config.toml";        ///< the resolved config
inline constexpr std::string_view kSteps = "steps.jsonl";         ///< per-step scalars
inline constexpr std::string_view kMetrics = "metrics.jsonl";     ///< per-epoch results
inline constexpr std::string_view kSummary = "summary.json";      ///< digest and totals
inline constexpr std::string_view kTimeline = "timeline.json";    ///< all ranks, merged at the end
inline constexpr std::string_view kTimelineStreams = "timeline";  ///< directory of rank-N.json
inline constexpr std::string_view kTensorBoard = "tensorboard";   ///< event files
inline constexpr std::string_view kLogs = "logs";                 ///< directory of rank-N.log
inline constexpr std::string_view kProfilePrefix = "profile-trainer";      ///< + N + ".jsonl"
inline constexpr std::string_view kDecisionsPrefix = "decisions-trainer";  ///< + N + ".jsonl"

/// profile-trainerN.jsonl: trainer N's profiling windows.
inline std::string profile(int trainer) {
  return fmt::format("{}{}.jsonl", kProfilePrefix, trainer);
}
/// decisions-trainerN.jsonl: trainer N's offload decisions.
inline std::string decisions(int trainer) {
  return fmt::format("{}{}.jsonl", kDecisionsPrefix, trainer);
}
/// timeline/rank-N.json: rank N's streamed timeline.
inline std::string timeline_stream(int rank) {
  return fmt::format("{}/rank-{}.json", kTimelineStreams, rank);
}
/// logs/rank-N.log: rank N's log.
inline std::string rank_log(int rank) {
  return fmt::format("{}/rank-{}.log", kLogs, rank);
}

}  // namespace conflux::train::run_files
