#pragma once
/// @file checkpoint_store.hpp
/// A directory of checkpoints: ckpt-<global step>.h5 files, a `latest` pointer updated only
/// after the new file is durable, retention of the newest K, the search for the newest valid
/// one on resume, and setting rejected ones aside.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conflux/ckpt/checkpoint_file.hpp"

namespace conflux::ckpt {

/// A checkpoint found on resume.
struct FoundCheckpoint {
  std::filesystem::path path;
  TrainingState state;
};

/// Called for each checkpoint skipped on resume, with the reason.
using SkipReporter = std::function<void(const std::filesystem::path&, const std::string& why)>;

/// Checkpoints of one run in one directory.
class CheckpointStore {
 public:
  /// Store in `dir` (created on the first publish), keeping the newest `keep` (>= 1).
  CheckpointStore(std::filesystem::path dir, int keep);
  /// The directory.
  const std::filesystem::path& dir() const noexcept { return dir_; }
  /// File of the checkpoint taken after `global_step` steps: <dir>/ckpt-000000100.h5.
  std::filesystem::path path_for(std::uint64_t global_step) const;
  /// Writes the checkpoint durably, then points `latest` at it, then deletes checkpoints
  /// beyond the newest K and temporary files left by killed writers. On a write failure the
  /// previous checkpoints and `latest` are untouched and RuntimeError propagates.
  WriteStats publish(const TrainingState& state);
  /// Checkpoint files, newest first: the one `latest` names, then the others by step.
  std::vector<std::filesystem::path> candidates() const;
  /// The newest checkpoint that reads and verifies, or nothing; `on_skip` hears about each
  /// corrupt one passed over.
  std::optional<FoundCheckpoint> newest_valid(const SkipReporter& on_skip) const;
  /// Renames a rejected checkpoint to <name>.corrupt (kept for inspection; no longer a
  /// candidate, nor counted by retention); returns the new path.
  std::filesystem::path set_aside(const std::filesystem::path& rejected) const;

 private:
  std::filesystem::path dir_;
  int keep_;
};

}  // namespace conflux::ckpt
