#pragma once
/// @file log.hpp
/// Rank-tagged log lines (fmt). A Logger is a small value passed down, not a global.

#include <fmt/format.h>

#include <cstdio>
#include <string>

namespace conflux {

/// Writes "[conflux rR] message" lines; info() to stdout, warn()/error() to stderr.
class Logger {
 public:
  /// Logger for world rank `rank` (-1 before MPI is up).
  explicit Logger(int rank = -1) : rank_(rank) {}
  /// Informational line.
  template <typename... Args>
  void info(fmt::format_string<Args...> format, Args&&... args) const {
    write(stdout, "", fmt::format(format, std::forward<Args>(args)...));
  }
  /// Warning line.
  template <typename... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) const {
    write(stderr, "warning: ", fmt::format(format, std::forward<Args>(args)...));
  }
  /// Error line.
  template <typename... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) const {
    write(stderr, "error: ", fmt::format(format, std::forward<Args>(args)...));
  }
  /// The rank in the prefix.
  int rank() const noexcept { return rank_; }

 private:
  void write(std::FILE* stream, const char* level, const std::string& message) const;
  int rank_;
};

/// The local time now, formatted by strftime (e.g. "%Y%m%d-%H%M%S").
std::string local_time(const char* strftime_format);

}  // namespace conflux
