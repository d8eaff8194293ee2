#include "conflux/train/training_data.hpp"

#include "conflux/core/error.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/io/hdf5_dataset.hpp"

namespace conflux::train {

namespace {
void truncate(data::Dataset& split, std::int64_t limit) {
  if (limit <= 0 || static_cast<std::size_t>(limit) >= split.size()) return;
  split.labels.resize(static_cast<std::size_t>(limit));
  split.images.resize(static_cast<std::size_t>(limit) * split.shape.size());
}
}  // namespace

data::DatasetSplits load_training_data(const Config& config) {
  const auto& d = config.data();
  data::DatasetSplits splits;
  if (!d.hdf5_file.empty()) {
    splits = data::read_hdf5_dataset(d.hdf5_file);
    CONFLUX_REQUIRE(splits.train.name == d.dataset,
                    "{}: data.hdf5_file '{}' holds dataset '{}' but data.dataset is '{}'",
                    config.where("data.hdf5_file"), d.hdf5_file.string(), splits.train.name,
                    d.dataset);
  } else {
    splits = data::load_dataset(d.dataset, d.dir);
  }
  CONFLUX_REQUIRE(splits.train.size() > 0 && splits.test.size() > 0,
                  "dataset '{}' has an empty split", d.dataset);
  truncate(splits.train, d.train_limit);
  truncate(splits.test, d.test_limit);
  return splits;
}

}  // namespace conflux::train
