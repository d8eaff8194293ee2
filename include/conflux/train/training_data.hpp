#pragma once
/// @file training_data.hpp
/// Loads the dataset a config names: original files or the converted HDF5 file, with limits.

#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/io/sample_source.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"

namespace conflux::train {

/// Train and test splits for `config` ([data] section) as sources: built-in datasets in memory,
/// your own data streamed; InputError naming the key and file on any problem.
data::SourceSplits open_training_data(const Config& config);

/// How samples are decoded (data.channels) and what a corrupt one does (data.on_corrupt);
/// skipped samples are named on `log` (null: not logged).
data::SampleDecoding sample_decoding(const Config& config, const Logger* log);

/// Read-ahead bound per rank in bytes (data.cache_mb).
std::size_t read_ahead_bytes(const Config& config);

/// Logs a rank's memory at the end of a run (docs/design.md invariant 7): peak RSS, the
/// read-ahead's peak against its bound, the source's index, and samples skipped as corrupt.
void log_memory(const Logger& log, const std::string& who, const data::FetcherStats& fetcher,
                std::uint64_t skipped, std::size_t index_bytes);

}  // namespace conflux::train
