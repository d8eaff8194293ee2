#include "conflux/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "conflux/core/error.hpp"

namespace conflux {

namespace {

void fsync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  CONFLUX_CHECK(fd >= 0, "cannot open {} to sync it: {}", path.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  CONFLUX_CHECK(rc == 0, "fsync of {} failed: {}", path.string(), std::strerror(saved));
}

}  // namespace

void publish_atomically(const std::filesystem::path& path,
                        const std::function<void(const std::filesystem::path& temp)>& write) {
  auto temp = path;
  temp += ".tmp-" + std::to_string(::getpid());
  try {
    write(temp);
    fsync_path(temp, O_RDONLY);
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    CONFLUX_CHECK(!ec, "cannot rename {} to {}: {}", temp.string(), path.string(), ec.message());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
  // Makes the rename itself durable.
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

void publish_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  publish_atomically(path, [&](const std::filesystem::path& temp) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CONFLUX_CHECK(fd >= 0, "cannot create {}: {}", temp.string(), std::strerror(errno));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int saved = n < 0 ? errno : ENOSPC;  // a zero-byte write means no room left
        ::close(fd);
        CONFLUX_RUNTIME_ERROR("cannot write {}: {}", temp.string(), std::strerror(saved));
      }
      done += static_cast<std::size_t>(n);
    }
    CONFLUX_CHECK(::close(fd) == 0, "cannot close {}: {}", temp.string(), std::strerror(errno));
  });
}

void publish_text_file(const std::filesystem::path& path, std::string_view text) {
  publish_bytes(path, std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace conflux
