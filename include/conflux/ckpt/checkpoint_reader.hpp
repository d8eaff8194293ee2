#pragma once
/// @file checkpoint_reader.hpp
/// Reading and verifying one checkpoint file (docs/checkpoints.md).

#include <filesystem>
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

/// A checkpoint as read, with the checksum it was verified against.
struct VerifiedCheckpoint {
  TrainingState state;
  std::string checksum;  ///< "crc32c:xxxxxxxx", stored and recomputed alike
};

/// Reads and verifies a checkpoint; CorruptCheckpoint naming the file and what is wrong.
TrainingState read_checkpoint(const std::filesystem::path& path);

/// read_checkpoint() that also returns the verified checksum.
VerifiedCheckpoint read_verified_checkpoint(const std::filesystem::path& path);

}  // namespace conflux::ckpt
