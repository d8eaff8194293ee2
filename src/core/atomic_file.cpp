#include "conflux/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

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

void publish_text_file(const std::filesystem::path& path, std::string_view text) {
  publish_atomically(path, [&](const std::filesystem::path& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    CONFLUX_CHECK(out.good(), "cannot write {}", temp.string());
  });
}

}  // namespace conflux
