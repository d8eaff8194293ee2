#pragma once
/// @file pack_format.hpp
/// The pack format of `conflux data pack` (docs/datasets.md, "Packs"): one directory holding
/// index.h5 and the shard files <split>-00000.h5, ... Each shard holds one contiguous uint8
/// dataset /bytes, the samples' encoded files back to back; index.h5 says where each sample is.
/// Shared by the writer (pack_writer) and the reader (packed_source).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conflux/data/io/name_table.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::data::pack {

/// The version this code writes and reads (root attribute format_version).
inline constexpr std::int32_t kFormatVersion = 1;
/// The index file's name inside a pack directory.
inline constexpr const char* kIndexFile = "index.h5";
/// The dataset of a shard file holding its samples' bytes.
inline constexpr const char* kShardBytes = "/bytes";
/// The most shards one split may have (the in-memory index keeps 16-bit shard numbers).
inline constexpr std::size_t kMaxShards = 65535;

/// Root attributes of index.h5.
namespace attr {
inline constexpr const char* kFormatVersion = "format_version";  ///< int32
inline constexpr const char* kDataset = "dataset";               ///< string: the packed source
inline constexpr const char* kNumClasses = "num_classes";        ///< int32
inline constexpr const char* kClassNames = "class_names";        ///< string array
inline constexpr const char* kSplits = "splits";                 ///< string array
}  // namespace attr

/// Datasets of split group /<split> in index.h5: per sample (N), then per shard (S).
namespace dset {
inline constexpr const char* kLabels = "labels";                  ///< int32 [N]
inline constexpr const char* kShard = "shard";                    ///< uint32 [N]: shard number
inline constexpr const char* kOffset = "offset";                  ///< uint64 [N]: into its /bytes
inline constexpr const char* kLength = "length";                  ///< uint32 [N]: bytes
inline constexpr const char* kNameBytes = "name_bytes";           ///< uint8 [total]: UTF-8 names
inline constexpr const char* kNameEnd = "name_end";               ///< uint64 [N]: end of name i
inline constexpr const char* kShardFiles = "shard_files";         ///< string [S]: file names
inline constexpr const char* kShardSha256 = "shard_sha256";       ///< string [S]: hex digests
inline constexpr const char* kShardBytes = "shard_bytes";         ///< uint64 [S]: size of /bytes
inline constexpr const char* kShardFileSize = "shard_file_size";  ///< uint64 [S]: file size
}  // namespace dset

/// "train-00003.h5": the file name of a split's shard.
std::string shard_file_name(const std::string& split, std::size_t shard);

/// One split's index as a reader keeps it in memory: about 18 bytes per sample plus its name.
struct SplitIndex {
  std::vector<model::Label> labels;
  std::vector<std::uint16_t> shard;
  std::vector<std::uint64_t> offset;
  std::vector<std::uint32_t> length;
  NameTable names;  ///< original relative file names, for messages

  /// Number of samples.
  std::size_t size() const noexcept { return labels.size(); }
  /// Bytes held (by capacity).
  std::size_t resident_bytes() const noexcept;
};

}  // namespace conflux::data::pack
