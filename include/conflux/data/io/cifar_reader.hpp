#pragma once
/// @file cifar_reader.hpp
/// Reader for the CIFAR-10 binary format: records of 1 label byte + 3072 bytes (R, G, B planes).

#include <filesystem>
#include <vector>

#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::data {

/// CIFAR-10 class names in label order.
const std::vector<std::string>& cifar10_class_names();

/// Reads and concatenates CIFAR-10 binary batch files into one split (3x32x32). Throws
/// InputError naming the file and byte offset for: unreadable file, a size that is not a
/// whole number of 3073-byte records (truncation), `expected_records` set and not matched
/// per file, and a label byte > 9.
InMemorySplit read_cifar10_split(const std::vector<std::filesystem::path>& files,
                                 std::size_t expected_records_per_file = 10000);

}  // namespace conflux::data
