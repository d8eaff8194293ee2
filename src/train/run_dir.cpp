#include "conflux/train/run_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "conflux/core/error.hpp"

namespace conflux::train {

namespace {

// Creates `dir` and a file in it, so that a read-only or unusable checkpoint directory fails
// at start-up rather than at the first checkpoint, hours later.
void check_writable(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  CONFLUX_CHECK(!ec, "cannot create {}: {}", dir.string(), ec.message());
  const std::filesystem::path probe = dir / fmt::format(".write-test-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CONFLUX_CHECK(fd >= 0, "cannot write in {}: {}", dir.string(), std::strerror(errno));
  ::close(fd);
  std::filesystem::remove(probe, ec);
}

}  // namespace

// Two jobs must never share a run directory (nor a checkpoint directory outside it): the
// second would overwrite the first's config and metrics, and the first's retention could delete
// the checkpoint the second resumes from.
std::vector<DirectoryLock> lock_run_dirs(const Config& config, std::string_view holder,
                                         const Logger& log) {
  // A directory that cannot be created or written is the config's fault: name the key.
  const auto usable = [&](const char* key, const auto& use) {
    try {
      use();
    } catch (const RuntimeError& e) {
      CONFLUX_INPUT_ERROR("{}: {} cannot be used: {}", config.where(key), key, e.what());
    }
  };
  std::vector<DirectoryLock> locks;
  usable("run.dir", [&] { locks.emplace_back(config.run().dir, holder); });
  const auto run_dir = std::filesystem::weakly_canonical(config.run().dir);
  const auto ckpt_dir = std::filesystem::weakly_canonical(config.checkpoint().dir);
  const bool inside =
      std::mismatch(run_dir.begin(), run_dir.end(), ckpt_dir.begin(), ckpt_dir.end()).first ==
      run_dir.end();
  // Outside run.dir, creating its lock file already proves the directory can be written.
  usable("checkpoint.dir", [&] {
    if (inside) {
      check_writable(config.checkpoint().dir);
    } else {
      locks.emplace_back(config.checkpoint().dir, holder);
    }
  });
  for (const auto& lock : locks) {
    if (lock.state() == DirectoryLock::State::kUnsupported) {
      log.warn(
          "{}: this file system has no locks, so a second job on the same run "
          "directory would not be detected",
          lock.path().string());
    }
  }
  return locks;
}

}  // namespace conflux::train
