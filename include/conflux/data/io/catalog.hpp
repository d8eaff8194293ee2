#pragma once
/// @file catalog.hpp
/// Finds and loads the known datasets from a data directory (docs/design.md, "Data directory"):
///   <dir>/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
///   <dir>/fashion-mnist/ (same names as mnist)
///   <dir>/cifar-10/data_batch_{1..5}.bin, test_batch.bin

#include <filesystem>
#include <string>
#include <vector>

#include "conflux/data/io/in_memory_split.hpp"

namespace conflux::data {

/// Names accepted by load_dataset: "mnist", "fashion-mnist", "cifar10".
const std::vector<std::string>& known_dataset_names();

/// The shape and class count of a known dataset's images, without reading it: what a config
/// implies before its data is loaded (`conflux config check`).
struct KnownDataset {
  ImageShape shape;     ///< e.g. 1x28x28 for MNIST
  int num_classes = 0;  ///< 10 for all three
};

/// The facts of "mnist", "fashion-mnist" or "cifar10"; InputError for another name.
KnownDataset known_dataset(const std::string& name);

/// Loads train and test splits of a known dataset from its sub-directory of `data_dir`.
/// InputError for an unknown name (listing the known ones), a missing directory or file
/// (naming the path), and any reader error.
InMemorySplits load_dataset(const std::string& name, const std::filesystem::path& data_dir);

}  // namespace conflux::data
