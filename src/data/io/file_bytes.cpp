#include "conflux/data/io/file_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "conflux/core/error.hpp"

namespace conflux::data {

ReadOnlyFile::ReadOnlyFile(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  CONFLUX_REQUIRE(fd_ >= 0, "{}: cannot open it: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(std::exchange(fd_, -1));
    CONFLUX_INPUT_ERROR("{}: not a readable regular file", path.string());
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

void ReadOnlyFile::read(std::uint64_t offset, std::uint64_t length, std::vector<std::uint8_t>& out,
                        const std::string& what) const {
  out.resize(length);
  std::uint64_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(fd_, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    CONFLUX_REQUIRE(n >= 0, "{}: read failed: {}", what, std::strerror(errno));
    CONFLUX_REQUIRE(n > 0, "{}: the file ends after {} of the {} bytes", what, done, length);
    done += static_cast<std::uint64_t>(n);
  }
}

void read_whole_file(const std::filesystem::path& path, std::vector<std::uint8_t>& out) {
  const ReadOnlyFile file(path);
  file.read(0, file.size(), out, path.string());
}

}  // namespace conflux::data
