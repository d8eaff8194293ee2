#pragma once
/// @file atomic_file.hpp
/// Publishing a file atomically: readers (and a crash) see the old file or the complete new
/// one, never a half-written file (docs/design.md invariant 4).

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <string_view>

namespace conflux {

/// Calls `write(temp)` to create the file at `temp` (beside `path`), fsyncs it, renames it to
/// `path` and fsyncs the directory. On any failure the temporary file is removed, `path` is
/// left as it was, and the exception propagates (RuntimeError for a failed fsync or rename).
void publish_atomically(const std::filesystem::path& path,
                        const std::function<void(const std::filesystem::path& temp)>& write);

/// publish_atomically() for a file holding exactly `bytes`, written with plain write() calls.
void publish_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes);

/// publish_atomically() for a text file with the given contents.
void publish_text_file(const std::filesystem::path& path, std::string_view text);

}  // namespace conflux
