#pragma once
/// @file stats.hpp
/// Summary statistics of repeated benchmark measurements (the library's, in bench's namespace).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "conflux/core/stats.hpp"

namespace conflux::bench {

using ::conflux::median;

/// Round by round a[i] / b[i]: a measurement as a fraction of one taken in the same round.
inline std::vector<double> ratios(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) r.push_back(a[i] / b[i]);
  return r;
}

/// Per-round fractions as a table cell: "[0.91 0.88 ...]".
inline std::string per_round(const std::vector<double>& fractions) {
  return fmt::format("[{:.2f}]", fmt::join(fractions, " "));
}

}  // namespace conflux::bench
