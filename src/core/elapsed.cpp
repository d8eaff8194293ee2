#include "conflux/core/elapsed.hpp"

#include <fmt/format.h>

#include <cmath>

namespace conflux {

std::string human_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

}  // namespace conflux
