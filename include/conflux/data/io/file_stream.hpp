#pragma once
/// @file file_stream.hpp
/// Sequential reader of a data file, plain or gzip-compressed (detected by its magic bytes),
/// that SHA-256-hashes the file's raw bytes as it reads them, so provenance costs no second
/// pass over the file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace conflux::data {

/// Reads a file front to back. Offsets count bytes of the decompressed stream; errors are
/// InputError naming the file (unreadable file, corrupt or truncated gzip, garbage after the
/// gzip stream).
class FileStream {
 public:
  /// Opens `path`; InputError if it is missing, a directory, or cannot be opened.
  explicit FileStream(std::filesystem::path path);
  ~FileStream();
  FileStream(FileStream&&) noexcept;
  FileStream& operator=(FileStream&&) noexcept;
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;

  /// The path given to the constructor.
  const std::filesystem::path& path() const noexcept;
  /// True when the file starts with the gzip magic bytes 1f 8b.
  bool gzip() const noexcept;
  /// Size of the file on disk in bytes (compressed size for gzip).
  std::uint64_t file_size() const noexcept;
  /// Bytes of the (decompressed) stream consumed so far.
  std::uint64_t offset() const noexcept;
  /// "byte offset N", with " (decompressed)" appended for gzip files, for error messages.
  std::string where(std::uint64_t offset) const;

  /// Fills `dst`; returns fewer bytes only at the end of the stream.
  std::size_t read(std::span<std::byte> dst);
  /// Reads and discards the rest of the stream; returns how many bytes that was.
  std::uint64_t skip_to_end();
  /// SHA-256 of the whole file on disk as lower-case hex (hashes what is still unread first).
  /// Call once, last.
  std::string finish_sha256_hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::data
