#pragma once
/// @file checkpoint_file.hpp
/// One checkpoint as one HDF5 file (layout in docs/checkpoints.md): written to a temporary
/// file, flushed, fsynced and renamed; a checksum over every dataset is verified on load.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "conflux/ckpt/training_state.hpp"
#include "conflux/core/error.hpp"

namespace conflux::ckpt {

/// A file that is not a complete, intact conflux checkpoint (missing, truncated, not HDF5,
/// wrong format or version, checksum mismatch). Exit code 2. Resume skips such files.
class CorruptCheckpoint : public InputError {
 public:
  using InputError::InputError;
};

/// Sizes and timing of one write.
struct WriteStats {
  std::uint64_t bytes = 0;  ///< size of the published file
  double seconds = 0;       ///< create + write + fsync + rename
};

/// Memory for the in-memory file image, kept between write_checkpoint() calls so that a
/// checkpoint writes into pages already mapped instead of faulting in a fresh buffer.
class ImageBuffer {
 public:
  ImageBuffer() = default;
  ImageBuffer(ImageBuffer&&) noexcept = default;
  ImageBuffer& operator=(ImageBuffer&&) noexcept = default;
  /// Bytes currently reserved.
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  friend class ImageBufferAccess;
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t capacity_ = 0;
  bool in_use_ = false;
};

/// Writes `state` to `path` atomically (temp file beside it, fsync, rename, directory fsync).
/// On failure (e.g. ENOSPC) `path` is untouched, the temp file is removed, and RuntimeError
/// names the file and the cause. `buffer`, when given, is reused for the file image.
WriteStats write_checkpoint(const std::filesystem::path& path, const TrainingState& state,
                            ImageBuffer* buffer = nullptr);

/// Reads and verifies a checkpoint; CorruptCheckpoint naming the file and what is wrong.
TrainingState read_checkpoint(const std::filesystem::path& path);

/// Human-readable description for `conflux ckpt inspect` (format, position, model tensors with
/// shapes, optimiser, per-trainer progress, metrics, checksum status, config). Throws
/// CorruptCheckpoint like read_checkpoint.
std::string describe_checkpoint(const std::filesystem::path& path);

}  // namespace conflux::ckpt
