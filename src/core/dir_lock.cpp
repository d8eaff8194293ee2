#include "conflux/core/dir_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "conflux/core/error.hpp"

namespace conflux {

namespace {

constexpr const char* kLockName = ".conflux-lock";

// What the holder wrote into the lock file (read by the job that is refused).
std::string read_holder(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "a process that has not written its name yet" : text;
}

bool locks_unsupported(int error) {
  return error == ENOLCK || error == EOPNOTSUPP || error == ENOSYS || error == EINVAL;
}

}  // namespace

DirectoryLock::DirectoryLock(const std::filesystem::path& dir, std::string_view holder)
    : path_(dir / kLockName) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  CONFLUX_CHECK(!ec, "cannot create the directory {}: {}", dir.string(), ec.message());
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  CONFLUX_CHECK(fd_ >= 0, "cannot open the lock file {}: {}", path_.string(), std::strerror(errno));
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd_, F_SETLK, &lock) != 0) {
    const int error = errno;
    if (locks_unsupported(error)) {
      state_ = State::kUnsupported;
    } else {
      ::close(fd_);
      fd_ = -1;
      if (error == EACCES || error == EAGAIN) {
        throw BusyError(fmt::format("the run directory {} is in use by another conflux job ({}); "
                                    "two jobs must not share one: wait for that job to end, or "
                                    "give this one another run.dir",
                                    dir.string(), read_holder(path_)),
                        __FILE__, __LINE__);
      }
      CONFLUX_RUNTIME_ERROR("cannot lock {}: {}", path_.string(), std::strerror(error));
    }
  }
  // Ours now: say who holds it (a failure here costs only the next job's message).
  const std::string text = std::string(holder) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const auto written = ::pwrite(fd_, text.data(), text.size(), 0);
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (deleting it would race)
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), state_(other.state_) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    state_ = other.state_;
  }
  return *this;
}

}  // namespace conflux
