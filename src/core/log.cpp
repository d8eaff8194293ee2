#include "conflux/core/log.hpp"

#include <ctime>

namespace conflux {

void Logger::write(std::FILE* stream, const char* level, const std::string& message) const {
  // One fmt::print per line keeps lines of different ranks from interleaving mid-line.
  if (rank_ >= 0) {
    fmt::print(stream, "[conflux r{}] {}{}\n", rank_, level, message);
  } else {
    fmt::print(stream, "[conflux] {}{}\n", level, message);
  }
  std::fflush(stream);
}

std::string local_time(const char* strftime_format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[64];
  return std::string(text, std::strftime(text, sizeof text, strftime_format, &tm));
}

}  // namespace conflux
