#pragma once
/// @file run_plots.hpp
/// The figures of a run report, made from its records: loss, accuracy, samples/s, data wait,
/// offload ratio with the controller's decisions, checkpoint stalls (docs/report.md lists
/// what each shows).

#include <optional>
#include <string>
#include <vector>

#include "conflux/report/plot.hpp"
#include "conflux/report/run_records.hpp"

namespace conflux::report {

/// One figure of the page: its PNG's file name, a heading, a caption, and the plot; without
/// a plot, `missing` says why there is none (the data it needs was not recorded).
struct Figure {
  std::string file{};  ///< e.g. "loss.png", relative to the report directory
  std::string heading{};
  std::string caption{};
  std::optional<Plot> plot{};
  std::string missing{};
};

/// The report's figures, in page order; every one is listed, with a plot or the reason why not.
std::vector<Figure> run_figures(const RunRecords& records);

}  // namespace conflux::report
