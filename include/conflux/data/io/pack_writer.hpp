#pragma once
/// @file pack_writer.hpp
/// Writes a pack (pack_format.hpp) from sources of encoded samples: `conflux data pack`.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "conflux/data/io/sample_source.hpp"

namespace conflux::data {

/// One split to pack.
struct PackSplit {
  std::string name;                      ///< "train", "val": its group and shard file prefix
  const SampleSource* source = nullptr;  ///< kEncoded samples
  /// The name a sample is recorded under (e.g. "<class>/<file>"); empty: where(i).
  std::function<std::string(std::size_t)> sample_name;
};

/// How to pack.
struct PackOptions {
  /// A shard is closed once it holds at least this many bytes (a sample never spans shards).
  std::uint64_t shard_bytes = std::uint64_t{1024} << 20;
};

/// What was written.
struct PackSummary {
  std::uint64_t samples = 0;  ///< over all splits
  std::uint64_t bytes = 0;    ///< sample bytes over all shards
  std::size_t shards = 0;     ///< shard files
};

/// Writes `splits` as a pack into the new directory `out`: everything goes to a temporary
/// directory beside it, renamed to `out` once complete (a failure leaves no pack behind).
/// Deterministic: the same sources give byte-identical files. InputError when `out` exists
/// and is not empty, a source gives pixels rather than encoded files, the splits disagree on
/// the classes, or a sample cannot be read (naming where()).
PackSummary write_pack(const std::filesystem::path& out, const std::vector<PackSplit>& splits,
                       const PackOptions& options = {});

}  // namespace conflux::data
