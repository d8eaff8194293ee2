#pragma once
/// @file log.hpp
/// Rank-tagged, time-stamped log lines (fmt). A Logger is a small value passed down, not a
/// global; its copies share where they write.

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace conflux {

/// Writes "[conflux rR YYYY-mm-dd HH:MM:SS.mmm] message" lines; info() to stdout,
/// warn()/error() to stderr, and every line also to a file once tee_to() names one.
class Logger {
 public:
  /// Logger for world rank `rank` (-1 before MPI is up).
  explicit Logger(int rank = -1);
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
  /// From now on this logger and all its copies also append every line to `path` (the
  /// rank's own log file in the run directory); Error when it cannot be opened.
  void tee_to(const std::filesystem::path& path) const;

 private:
  struct Sinks;
  void write(std::FILE* stream, const char* level, const std::string& message) const;
  int rank_;
  std::shared_ptr<Sinks> sinks_;  // shared by copies, so that tee_to reaches them all
};

/// The local time now, formatted by strftime (e.g. "%Y%m%d-%H%M%S").
std::string local_time(const char* strftime_format);

}  // namespace conflux
