#pragma once
/// @file name_table.hpp
/// A compact list of many short strings (file names of a streamed source's index): one byte
/// blob and one 32-bit end offset per string, about 4 bytes of overhead per name rather than
/// the 32 of a std::string (plus its heap block when the name is longer than 15 bytes).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::data {

/// Strings appended once, then read by index; safe to read from several threads at once.
class NameTable {
 public:
  /// Appends `name`. RuntimeError when the blob would pass 4 GiB (the offsets are 32-bit).
  void push_back(std::string_view name);
  /// Number of names.
  std::size_t size() const noexcept { return ends_.size(); }
  /// Name i.
  std::string_view operator[](std::size_t i) const noexcept {
    const std::uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(blob_).substr(begin, ends_[i] - begin);
  }
  /// Drops spare capacity (after the last push_back).
  void shrink_to_fit();
  /// Bytes held (blob and offsets, by capacity).
  std::size_t resident_bytes() const noexcept {
    return blob_.capacity() + ends_.capacity() * sizeof(std::uint32_t);
  }

 private:
  std::string blob_;
  std::vector<std::uint32_t> ends_;
};

}  // namespace conflux::data
