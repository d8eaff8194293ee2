#pragma once
/// @file open_source.hpp
/// The one place a config's [data] section becomes the train and test sources, for every
/// data.dataset value (docs/datasets.md).

#include <string>

#include "conflux/config/sections.hpp"
#include "conflux/data/io/sample_source.hpp"

namespace conflux::data {

/// Opens the train and test sources `data` names: the built-in datasets (from data.hdf5_file
/// when set, else data.dir) in memory; image-folder, packed and hdf5-arrays streamed from
/// data.path, with data.train_split/test_split, data.channels, data.num_classes and the
/// data.hdf5_* keys. data.train_limit/test_limit keep the first N samples (LimitedSource).
/// InputError naming the key for a missing data.path, and naming the paths for bad data; the
/// test split must have the train split's classes (the difference is named).
SourceSplits open_sources(const DataSection& data);

/// InputError naming `what` and the class names that differ unless `test` has `train`'s
/// classes, in the same order.
void require_same_classes(const SampleSource& train, const SampleSource& test,
                          const std::string& what);

}  // namespace conflux::data
