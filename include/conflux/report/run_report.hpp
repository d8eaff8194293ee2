#pragma once
/// @file run_report.hpp
/// `conflux report`: a run directory summarised as an HTML page with its plots.

#include <filesystem>

namespace conflux::report {

/// Reads `run_dir`, draws its figures with gnuplot into `output_dir` (created when missing)
/// and writes `output_dir`/index.html, which names the PNGs relatively. Returns the page's
/// path. InputError (exit 2) naming the path for a missing or unreadable run directory or
/// file, and naming the package when gnuplot is not installed; RuntimeError (exit 3) when
/// gnuplot fails or the output cannot be written. A figure left without data this time has
/// its PNG from an earlier report removed, so the folder never shows a stale one.
std::filesystem::path write_run_report(const std::filesystem::path& run_dir,
                                       const std::filesystem::path& output_dir);

}  // namespace conflux::report
