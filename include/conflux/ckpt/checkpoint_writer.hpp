#pragma once
/// @file checkpoint_writer.hpp
/// Writing one checkpoint file atomically (docs/design.md invariant 4, docs/checkpoints.md).

#include <cstdint>
#include <filesystem>

#include "conflux/ckpt/training_state.hpp"

namespace conflux::ckpt {

/// Sizes and timing of one write.
struct WriteStats {
  std::uint64_t bytes = 0;  ///< size of the published file
  double seconds = 0;       ///< create + write + fsync + rename
};

/// Writes `state` to `path` atomically (temp file beside it, fsync, rename, directory fsync).
/// On failure (e.g. ENOSPC) `path` is untouched, the temp file is removed, and RuntimeError
/// names the file and the cause.
WriteStats write_checkpoint(const std::filesystem::path& path, const TrainingState& state);

}  // namespace conflux::ckpt
