#pragma once
/// @file packed_source.hpp
/// A split of a pack written by `conflux data pack` (pack_format.hpp), streamed: the source
/// keeps the split's index and one open descriptor per shard, and read() is one pread of the
/// sample's byte range (no HDF5 call, so no lock: docs/datasets.md, "Why HDF5").

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conflux/data/io/file_bytes.hpp"
#include "conflux/data/io/pack_format.hpp"
#include "conflux/data/io/sample_source.hpp"

namespace conflux::data {

/// One split of a pack. Encoded samples.
class PackedSource final : public SampleSource {
 public:
  /// Opens split `split` of the pack in `dir` and validates its index against the shards:
  /// InputError naming index.h5 (and the sample) for a missing split, lengths that differ,
  /// a label out of range, a byte range beyond its shard's end; naming the shard for a missing
  /// shard or one whose size is not the recorded one. `channels`: what decoding converts to.
  PackedSource(const std::filesystem::path& dir, const std::string& split, int channels);

  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return index_.size(); }
  model::Label label(std::size_t i) const override;
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override;
  /// "<dir>/<shard file> offset <o> (sample '<name>')".
  std::string where(std::size_t i) const override;
  std::size_t resident_bytes() const noexcept override;

 private:
  struct Shard {
    std::string name;
    ReadOnlyFile file;
    std::uint64_t data_offset = 0;  // of /bytes in the file
  };
  void read_index(const std::filesystem::path& index_path, const std::string& split);
  void open_shards(const std::vector<std::uint64_t>& shard_bytes,
                   const std::vector<std::uint64_t>& file_sizes);

  std::filesystem::path dir_;
  SourceInfo info_;
  pack::SplitIndex index_;
  std::vector<Shard> shards_;
};

}  // namespace conflux::data
