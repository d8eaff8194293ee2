#include "conflux/train/training_data.hpp"

#include "conflux/core/error.hpp"
#include "conflux/core/resource_limits.hpp"
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

namespace {
data::DatasetSplits load_builtin(const Config& config) {
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
}  // namespace

data::SourceSplits open_training_data(const Config& config) {
  data::DatasetSplits splits = load_builtin(config);
  return {std::make_unique<data::InMemorySource>(std::move(splits.train)),
          std::make_unique<data::InMemorySource>(std::move(splits.test))};
}

data::SampleDecoding sample_decoding(const Config& config, const Logger* log) {
  return {.channels = config.data().channels,
          .skip_corrupt = config.data().on_corrupt == "skip",
          .log = log};
}

std::size_t read_ahead_bytes(const Config& config) {
  return static_cast<std::size_t>(config.data().cache_mb) << 20;
}

void log_memory(const Logger& log, const std::string& who, const data::FetcherStats& fetcher,
                std::uint64_t skipped, std::size_t index_bytes) {
  const auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  const std::string read_ahead =
      fetcher.budget_bytes == 0
          ? std::string("no read-ahead (data in memory)")
          : fmt::format(
                "read-ahead peak {:.1f} MiB (bound data.cache_mb = {:.0f} MiB), {} samples read "
                "ahead, {} read when needed, {:.1f} MiB read",
                mib(fetcher.peak_bytes_held), mib(fetcher.budget_bytes), fetcher.samples_read_ahead,
                fetcher.samples_read_late, mib(fetcher.bytes_read));
  log.info("{}: memory: peak RSS {:.1f} MiB; {}; dataset held by this rank {:.1f} MiB{}", who,
           mib(peak_rss_bytes()), read_ahead, mib(index_bytes),
           skipped > 0 ? fmt::format("; {} sample(s) skipped as corrupt", skipped) : "");
}

}  // namespace conflux::train
