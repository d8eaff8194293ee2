#include "conflux/core/error.hpp"

#include <atomic>

namespace conflux {
namespace {
// The rank is process-wide diagnostic context (like a logger's prefix), not configuration:
// errors may be raised deep in code that has no communicator at hand.
std::atomic<int> g_error_rank{-1};

const char* strip_source_root(const char* file) {
  std::string_view path(file);
  for (const char* root : {"src/", "include/", "tests/", "benchmarks/"}) {
    if (auto pos = path.rfind(root); pos != std::string_view::npos) return file + pos;
  }
  return file;
}
}  // namespace

void set_error_rank(int rank) noexcept {
  g_error_rank.store(rank, std::memory_order_relaxed);
}
int error_rank() noexcept {
  return g_error_rank.load(std::memory_order_relaxed);
}

Error::Error(ExitCode code, std::string message, const char* file, int line)
    : std::runtime_error(std::move(message)),
      code_(code),
      rank_(error_rank()),
      file_(strip_source_root(file)),
      line_(line) {}

std::string Error::describe() const {
  if (rank_ >= 0) return fmt::format("rank {}: {} ({}:{})", rank_, what(), file_, line_);
  return fmt::format("{} ({}:{})", what(), file_, line_);
}

}  // namespace conflux
