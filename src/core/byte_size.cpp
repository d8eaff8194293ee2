#include "conflux/core/byte_size.hpp"

#include <fmt/format.h>

#include <array>

namespace conflux {

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"KiB", "MiB", "GiB", "TiB",
                                                        "PiB", "EiB", "ZiB"};
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  std::size_t unit = 0;
  for (bytes /= 1024; bytes >= 1024 && unit + 1 < kUnits.size(); ++unit) bytes /= 1024;
  return fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

}  // namespace conflux
