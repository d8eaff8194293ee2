#pragma once
/// @file sha256.hpp
/// SHA-256 (FIPS 180-4) for dataset provenance and model digests; no external dependency.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace conflux::data {

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  /// Feeds bytes.
  void update(std::span<const std::byte> bytes);
  /// Finishes and returns the 32-byte digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> finish();
  /// Finishes and returns the digest as 64 lower-case hex characters.
  std::string finish_hex();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

/// SHA-256 of a byte range as lower-case hex.
std::string sha256_hex(std::span<const std::byte> bytes);
/// SHA-256 of a file's contents as lower-case hex; InputError if it cannot be read.
std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace conflux::data
