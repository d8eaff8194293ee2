#pragma once
/// @file hdf5_splits.hpp
/// One-file HDF5 form of a dataset (what `conflux data convert` writes) and its reader.
///
/// Layout: /train/images and /test/images, uint8 [N, C, H, W], chunked (one chunk per 256
/// images) and deflate-compressed; /train/labels and /test/labels, uint8 [N]. Attributes on
/// the root group: name (string), channels/height/width/num_classes (int32), class_names
/// (string array), source_files and source_sha256 (string arrays), format_version (int32 = 1).

#include <filesystem>

#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::data {

/// Writes both splits to `path` (atomically: a temporary file renamed into place).
void write_hdf5_splits(const std::filesystem::path& path, const InMemorySplits& splits);

/// Reads a file written by write_hdf5_splits. InputError naming the file and the object
/// for: not an HDF5 file, missing group/dataset/attribute, wrong rank or type, images and
/// labels of different lengths, label out of range.
InMemorySplits read_hdf5_splits(const std::filesystem::path& path);

}  // namespace conflux::data
