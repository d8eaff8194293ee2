#pragma once
/// @file dir_lock.hpp
/// An exclusive lock on a directory for the life of a job, so that two jobs never share a run
/// directory (a requeued job overlapping its predecessor, a job started twice).

#include <filesystem>
#include <string>
#include <string_view>

namespace conflux {

/// Holds a POSIX record lock (fcntl F_SETLK) on `<dir>/.conflux-lock` while alive. The kernel
/// releases it when the process ends, however it ends, so a killed job leaves no stale lock;
/// NFS (v3 with lockd, v4), Lustre (mounted with `flock`), GPFS and BeeGFS carry such locks
/// between hosts. The file holds the holder's description, which the next job's error names.
/// Move-only; one process holds it (POSIX locks belong to a process, and closing any other
/// descriptor of the file would drop it, so nothing else in the holder opens the file).
class DirectoryLock {
 public:
  /// Whether the file system enforced the lock (false: it has no locks; see docs/launching.md).
  enum class State { kHeld, kUnsupported };

  /// Creates `dir` if needed and locks it, recording `holder` ("pid 12 on host n01, since
  /// ..."). BusyError (exit 4) naming the holder when another process holds it; RuntimeError
  /// when the lock file cannot be created. A file system without locks gives kUnsupported.
  DirectoryLock(const std::filesystem::path& dir, std::string_view holder);
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  /// kHeld, or kUnsupported when the file system refused locks altogether.
  State state() const noexcept { return state_; }
  /// The lock file.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  State state_ = State::kHeld;
};

}  // namespace conflux
