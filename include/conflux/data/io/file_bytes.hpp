#pragma once
/// @file file_bytes.hpp
/// Byte-range reads of files with POSIX pread, which needs no lock: the streamed sources'
/// threads read different samples of one file at once.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace conflux::data {

/// A file open read-only for pread from any thread. Move-only; closes on destruction.
class ReadOnlyFile {
 public:
  ReadOnlyFile() = default;
  /// Opens `path`; InputError naming it when it cannot be opened or is not a regular file.
  explicit ReadOnlyFile(const std::filesystem::path& path);
  ~ReadOnlyFile();
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  /// Its size when it was opened.
  std::uint64_t size() const noexcept { return size_; }
  /// Replaces `out` with bytes [offset, offset + length). InputError naming `what` (and the
  /// system's reason) when they cannot all be read, e.g. the file was truncated since.
  void read(std::uint64_t offset, std::uint64_t length, std::vector<std::uint8_t>& out,
            const std::string& what) const;

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// Replaces `out` with the whole file at `path`; InputError naming it when it cannot be read.
void read_whole_file(const std::filesystem::path& path, std::vector<std::uint8_t>& out);

}  // namespace conflux::data
