#pragma once
/// @file stats.hpp
/// Summary statistics of repeated measurements.

#include <algorithm>
#include <vector>

namespace conflux {

/// Median of `values` (the mean of the middle two for an even count); 0 when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace conflux
