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

/// Writes `state` to `path` atomically (temp file beside it, fsync, rename, directory fsync).
/// On failure (e.g. ENOSPC) `path` is untouched, the temp file is removed, and RuntimeError
/// names the file and the cause.
WriteStats write_checkpoint(const std::filesystem::path& path, const TrainingState& state);

/// Reads and verifies a checkpoint; CorruptCheckpoint naming the file and what is wrong.
TrainingState read_checkpoint(const std::filesystem::path& path);

/// Human-readable description for `conflux ckpt inspect` (format, position, model tensors with
/// shapes, optimiser, per-trainer progress, metrics, checksum status, config). Throws
/// CorruptCheckpoint like read_checkpoint.
std::string describe_checkpoint(const std::filesystem::path& path);

}  // namespace conflux::ckpt
