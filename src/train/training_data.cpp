#include "conflux/train/training_data.hpp"

#include "conflux/core/error.hpp"
#include "conflux/core/resource_limits.hpp"
#include "conflux/data/io/open_source.hpp"

namespace conflux::train {

data::SourceSplits open_training_data(const Config& config) {
  data::SourceSplits splits = data::open_sources(config.data());
  CONFLUX_REQUIRE(splits.train->size() > 0 && splits.test->size() > 0,
                  "{}: dataset '{}' has an empty split ({} training, {} test samples)",
                  config.where("data.dataset"), config.data().dataset, splits.train->size(),
                  splits.test->size());
  return splits;
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
  log.info(
      "{}: memory: peak RSS {:.1f} MiB; {}; dataset in memory (index, labels; all pixels of a "
      "built-in dataset) {:.1f} MiB{}",
      who, mib(peak_rss_bytes()), read_ahead, mib(index_bytes),
      skipped > 0 ? fmt::format("; {} sample(s) skipped as corrupt", skipped) : "");
}

}  // namespace conflux::train
