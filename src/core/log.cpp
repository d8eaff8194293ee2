#include "conflux/core/log.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>

#include "conflux/core/error.hpp"

namespace conflux {

struct Logger::Sinks {
  std::mutex mutex;
  std::FILE* file = nullptr;
  ~Sinks() {
    if (file != nullptr) std::fclose(file);
  }
};

Logger::Logger(int rank) : rank_(rank), sinks_(std::make_shared<Sinks>()) {}

namespace {

// "2026-11-25 00:55:01.123", local time: what a person compares with the clock on the wall and
// with SLURM's and the scheduler's logs.
std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char text[32];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03}", std::string_view(text, n), millis);
}

}  // namespace

void Logger::tee_to(const std::filesystem::path& path) const {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::FILE* file = std::fopen(path.c_str(), "a");
  CONFLUX_CHECK(file != nullptr, "cannot open the log file {}: {}", path.string(),
                std::strerror(errno));
  const std::lock_guard lock(sinks_->mutex);
  if (sinks_->file != nullptr) std::fclose(sinks_->file);
  sinks_->file = file;
}

void Logger::write(std::FILE* stream, const char* level, const std::string& message) const {
  const std::string line =
      rank_ >= 0 ? fmt::format("[conflux r{} {}] {}{}\n", rank_, timestamp(), level, message)
                 : fmt::format("[conflux {}] {}{}\n", timestamp(), level, message);
  // One write per line keeps lines of different ranks and threads from interleaving mid-line.
  std::fputs(line.c_str(), stream);
  std::fflush(stream);
  const std::lock_guard lock(sinks_->mutex);
  if (sinks_->file != nullptr) {
    std::fputs(line.c_str(), sinks_->file);
    std::fflush(sinks_->file);
  }
}

std::string local_time(const char* strftime_format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[64];
  return std::string(text, std::strftime(text, sizeof text, strftime_format, &tm));
}

}  // namespace conflux
