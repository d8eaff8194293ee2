#pragma once
/// @file training_data.hpp
/// Loads the dataset a config names: original files or the converted HDF5 file, with limits.

#include "conflux/config/config.hpp"
#include "conflux/data/io/dataset.hpp"

namespace conflux::train {

/// Train and test splits for `config` ([data] section); InputError naming the key and file on
/// any problem.
data::DatasetSplits load_training_data(const Config& config);

}  // namespace conflux::train
