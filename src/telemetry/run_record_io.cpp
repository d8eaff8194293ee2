#include "conflux/telemetry/run_record_io.hpp"

#include <fmt/format.h>

#include "conflux/core/error.hpp"

namespace conflux::telemetry::record_detail {

void wrong_value(const std::string& where, std::string_view key, std::string_view expected,
                 std::string_view found) {
  throw InputError(fmt::format("{}: expected {} at \"{}\", found {}", where, expected, key, found),
                   __FILE__, __LINE__);
}

long double whole_number(double value, long double min, long double max, const std::string& where,
                         std::string_view key) {
  const long double v = value;
  if (std::trunc(v) != v || v < min || v > max) {
    wrong_value(where, key, fmt::format("a whole number in [{}, {}]", min, max),
                fmt::format("{}", value));
  }
  return v;
}

}  // namespace conflux::telemetry::record_detail
