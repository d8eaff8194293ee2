#pragma once
/// @file idx_reader.hpp
/// Reader for the IDX format of MNIST and Fashion-MNIST, plain or gzip-compressed.

#include <filesystem>
#include <string>
#include <vector>

#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::data {

/// Reads an image file (magic 0x00000803, dims N x H x W) and a label file (magic 0x00000801,
/// dim N) into one split. Throws InputError naming the file and byte offset (offsets count
/// bytes of the decompressed stream) for: unreadable file, corrupt gzip, bad magic number,
/// wrong dimension count, truncation, trailing bytes, image/label count mismatch, and a label
/// outside [0, class_names.size()).
InMemorySplit read_idx_split(const std::filesystem::path& images_file,
                             const std::filesystem::path& labels_file, std::string dataset_name,
                             std::vector<std::string> class_names);

}  // namespace conflux::data
