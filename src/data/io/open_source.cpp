#include "conflux/data/io/open_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/core/error.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/io/hdf5_array_source.hpp"
#include "conflux/data/io/hdf5_splits.hpp"
#include "conflux/data/io/image_folder_source.hpp"
#include "conflux/data/io/limited_source.hpp"
#include "conflux/data/io/packed_source.hpp"

namespace conflux::data {
namespace {

// The names in `a` that `b` lacks.
std::vector<std::string> missing_from(const std::vector<std::string>& a,
                                      const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& name : a) {
    if (std::find(b.begin(), b.end(), name) == b.end()) out.push_back(name);
  }
  return out;
}

SourceSplits open_builtin(const DataSection& data) {
  InMemorySplits splits;
  if (!data.hdf5_file.empty()) {
    splits = read_hdf5_splits(data.hdf5_file);
    CONFLUX_REQUIRE(splits.train.name == data.dataset,
                    "data.hdf5_file '{}' holds dataset '{}' but data.dataset is '{}'",
                    data.hdf5_file.string(), splits.train.name, data.dataset);
  } else {
    splits = load_dataset(data.dataset, data.dir);
  }
  return {std::make_unique<InMemorySource>(std::move(splits.train)),
          std::make_unique<InMemorySource>(std::move(splits.test))};
}

SourceSplits open_hdf5_arrays(const DataSection& data) {
  Hdf5ArrayOptions options{data.path, data.hdf5_train_images, data.hdf5_train_labels,
                           data.hdf5_layout == "chw", data.num_classes};
  SourceSplits splits;
  splits.train = std::make_unique<Hdf5ArraySource>(options);
  options.images = data.hdf5_test_images;
  options.labels = data.hdf5_test_labels;
  // The test labels must lie among the training classes, however those were found.
  options.num_classes = splits.train->info().num_classes;
  splits.test = std::make_unique<Hdf5ArraySource>(options);
  CONFLUX_REQUIRE(splits.test->info().shape == splits.train->info().shape,
                  "{}: the test images ({}) are {}x{}x{}, the training images ({}) {}x{}x{}",
                  data.path.string(), data.hdf5_test_images, splits.test->info().shape.channels,
                  splits.test->info().shape.height, splits.test->info().shape.width,
                  data.hdf5_train_images, splits.train->info().shape.channels,
                  splits.train->info().shape.height, splits.train->info().shape.width);
  return splits;
}

SourceSplits open_streamed(const DataSection& data) {
  CONFLUX_REQUIRE(!data.path.empty(), "data.dataset = \"{}\" needs data.path (where the {} is)",
                  data.dataset,
                  data.dataset == "image-folder" ? "image folder's root"
                  : data.dataset == "packed"     ? "pack directory"
                                                 : "HDF5 file");
  if (data.dataset == "hdf5-arrays") return open_hdf5_arrays(data);
  SourceSplits splits;
  if (data.dataset == "image-folder") {
    splits.train = std::make_unique<ImageFolderSource>(data.path, data.train_split, data.channels);
    splits.test = std::make_unique<ImageFolderSource>(data.path, data.test_split, data.channels);
  } else {
    splits.train = std::make_unique<PackedSource>(data.path, data.train_split, data.channels);
    splits.test = std::make_unique<PackedSource>(data.path, data.test_split, data.channels);
  }
  require_same_classes(*splits.train, *splits.test,
                       fmt::format("{}: splits {} (data.train_split) and {} (data.test_split)",
                                   data.path.string(), data.train_split, data.test_split));
  return splits;
}

}  // namespace

void require_same_classes(const SampleSource& train, const SampleSource& test,
                          const std::string& what) {
  const auto& a = train.info().class_names;
  const auto& b = test.info().class_names;
  if (a == b) return;
  const auto only_train = missing_from(a, b);
  const auto only_test = missing_from(b, a);
  CONFLUX_REQUIRE(!only_train.empty() || !only_test.empty(),
                  "{}: the same classes in another order", what);
  CONFLUX_INPUT_ERROR(
      "{} have different classes: only in the train split: [{}]; only in the "
      "test split: [{}]",
      what, fmt::join(only_train, ", "), fmt::join(only_test, ", "));
}

SourceSplits open_sources(const DataSection& data) {
  const bool builtin = std::find(known_dataset_names().begin(), known_dataset_names().end(),
                                 data.dataset) != known_dataset_names().end();
  CONFLUX_REQUIRE(builtin || data.dataset == "image-folder" || data.dataset == "packed" ||
                      data.dataset == "hdf5-arrays",
                  "data.dataset = \"{}\": unknown (expected {}, image-folder, packed or "
                  "hdf5-arrays)",
                  data.dataset, fmt::join(known_dataset_names(), ", "));
  SourceSplits splits = builtin ? open_builtin(data) : open_streamed(data);
  CONFLUX_REQUIRE(splits.train->size() > 0 && splits.test->size() > 0,
                  "dataset '{}' has an empty split", data.dataset);
  splits.train = limit_source(std::move(splits.train), static_cast<std::size_t>(data.train_limit));
  splits.test = limit_source(std::move(splits.test), static_cast<std::size_t>(data.test_limit));
  return splits;
}

}  // namespace conflux::data
