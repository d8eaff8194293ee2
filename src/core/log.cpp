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

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(ch));
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

}  // namespace conflux
