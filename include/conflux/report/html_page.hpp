#pragma once
/// @file html_page.hpp
/// The report's page: one self-contained HTML file (inline style, no script, nothing fetched)
/// whose images are the figures' PNGs beside it, referenced by relative names, so that the
/// folder can be copied anywhere.

#include <string>
#include <string_view>
#include <vector>

#include "conflux/report/run_plots.hpp"
#include "conflux/report/run_records.hpp"

namespace conflux::report {

/// `text` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string html_escape(std::string_view text);

/// The page for `records` and its `figures` (a figure with a plot shows its PNG; one without
/// says what is missing). `generated` is the time stamp printed at the top.
std::string report_html(const RunRecords& records, const std::vector<Figure>& figures,
                        const std::string& generated);

}  // namespace conflux::report
