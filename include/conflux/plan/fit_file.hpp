#pragma once
/// @file fit_file.hpp
/// The fitted performance model as a TOML file (written by `conflux fit`, read by `conflux
/// predict` and `conflux plan`).

#include <filesystem>

#include "conflux/plan/performance_model.hpp"

namespace conflux::plan {

/// Writes `model` as TOML (atomically).
void write_fit_file(const std::filesystem::path& path, const PerformanceModel& model);
/// Reads a model written by write_fit_file; InputError naming file and key.
PerformanceModel read_fit_file(const std::filesystem::path& path);

}  // namespace conflux::plan
