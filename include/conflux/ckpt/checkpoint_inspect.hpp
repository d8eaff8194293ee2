#pragma once
/// @file checkpoint_inspect.hpp
/// The text `conflux ckpt inspect` prints about a checkpoint.

#include <filesystem>
#include <string>

namespace conflux::ckpt {

/// Human-readable description for `conflux ckpt inspect` (format, position, model tensors with
/// shapes, optimiser, per-trainer progress, metrics, checksum status, config). Throws
/// CorruptCheckpoint like read_checkpoint.
std::string describe_checkpoint(const std::filesystem::path& path);

}  // namespace conflux::ckpt
