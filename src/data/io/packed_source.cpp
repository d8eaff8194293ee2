#include "conflux/data/io/packed_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::data {
namespace fs = std::filesystem;

namespace pack {

std::string shard_file_name(const std::string& split, std::size_t shard) {
  return fmt::format("{}-{:05}.h5", split, shard);
}

std::size_t SplitIndex::resident_bytes() const noexcept {
  return labels.capacity() * sizeof(model::Label) + shard.capacity() * sizeof(std::uint16_t) +
         offset.capacity() * sizeof(std::uint64_t) + length.capacity() * sizeof(std::uint32_t) +
         names.resident_bytes();
}

}  // namespace pack

namespace {

// The split's per-shard records, as index.h5 holds them.
struct ShardRecords {
  std::vector<std::string> files, sha256;
  std::vector<std::uint64_t> bytes, file_sizes;
};

ShardRecords read_shard_records(const h5::File& file, const std::string& at,
                                const std::string& split) {
  namespace d = pack::dset;
  ShardRecords r{file.read_strings(at + d::kShardFiles), file.read_strings(at + d::kShardSha256),
                 file.read_vector<std::uint64_t>(at + d::kShardBytes),
                 file.read_vector<std::uint64_t>(at + d::kShardFileSize)};
  const std::size_t n = r.files.size();
  CONFLUX_REQUIRE(n > 0 && n <= pack::kMaxShards && r.sha256.size() == n && r.bytes.size() == n &&
                      r.file_sizes.size() == n,
                  "{}: split {}: {} shard files, {} digests, {} sizes, {} file sizes (a damaged "
                  "index)",
                  file.label(), split, n, r.sha256.size(), r.bytes.size(), r.file_sizes.size());
  for (std::size_t s = 0; s < n; ++s) {
    // Only the names the writer makes: an index never leads outside its directory.
    CONFLUX_REQUIRE(r.files[s] == pack::shard_file_name(split, s),
                    "{}: split {}: shard {} is named '{}', expected '{}' (a damaged index)",
                    file.label(), split, s, r.files[s], pack::shard_file_name(split, s));
  }
  return r;
}

// The names of the split's samples, checked against name_end.
NameTable read_names(const h5::File& file, const std::string& at, std::size_t n) {
  const auto bytes = file.read_vector<std::uint8_t>(at + pack::dset::kNameBytes);
  const auto ends = file.read_vector<std::uint64_t>(at + pack::dset::kNameEnd);
  CONFLUX_REQUIRE(ends.size() == n, "{}: {} has {} entries for {} samples (a damaged index)",
                  file.label(), at + pack::dset::kNameEnd, ends.size(), n);
  NameTable names;
  std::uint64_t begin = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CONFLUX_REQUIRE(ends[i] >= begin && ends[i] <= bytes.size(),
                    "{}: {}[{}] = {} is outside [{}, {}] (a damaged index)", file.label(),
                    at + pack::dset::kNameEnd, i, ends[i], begin, bytes.size());
    names.push_back(
        std::string_view(reinterpret_cast<const char*>(bytes.data()) + begin, ends[i] - begin));
    begin = ends[i];
  }
  names.shrink_to_fit();
  return names;
}

}  // namespace

PackedSource::PackedSource(const fs::path& dir, const std::string& split, int channels)
    : dir_(dir) {
  std::error_code ec;
  CONFLUX_REQUIRE(fs::is_directory(dir, ec), "{}: no such pack directory", dir.string());
  info_.name = "packed";
  info_.format = SampleFormat::kEncoded;
  info_.shape = {channels, 0, 0};
  const fs::path index_path = dir / pack::kIndexFile;
  read_index(index_path, split);
}

void PackedSource::read_index(const fs::path& index_path, const std::string& split) {
  namespace d = pack::dset;
  const h5::File file = h5::File::open(index_path);
  const std::string& label = file.label();
  const auto version = file.read_attribute<std::int32_t>("/", pack::attr::kFormatVersion);
  CONFLUX_REQUIRE(version == pack::kFormatVersion,
                  "{}: pack format version {}; this conflux "
                  "reads version {}",
                  label, version, pack::kFormatVersion);
  const auto splits = file.read_strings_attribute("/", pack::attr::kSplits);
  CONFLUX_REQUIRE(file.exists("/" + split), "{}: no split '{}' in this pack (its splits: {})",
                  label, split, fmt::join(splits, ", "));
  info_.num_classes = file.read_attribute<std::int32_t>("/", pack::attr::kNumClasses);
  info_.class_names = file.read_strings_attribute("/", pack::attr::kClassNames);
  CONFLUX_REQUIRE(info_.num_classes > 0 &&
                      info_.class_names.size() == static_cast<std::size_t>(info_.num_classes),
                  "{}: num_classes {} but {} class names", label, info_.num_classes,
                  info_.class_names.size());
  const std::string at = "/" + split + "/";
  index_.labels = file.read_vector<model::Label>(at + d::kLabels);
  const auto shard = file.read_vector<std::uint32_t>(at + d::kShard);
  index_.offset = file.read_vector<std::uint64_t>(at + d::kOffset);
  index_.length = file.read_vector<std::uint32_t>(at + d::kLength);
  const std::size_t n = index_.labels.size();
  CONFLUX_REQUIRE(
      n > 0 && shard.size() == n && index_.offset.size() == n && index_.length.size() == n,
      "{}: split {}: {} labels, {} shard numbers, {} offsets, {} lengths (a damaged "
      "index, or an empty split)",
      label, split, n, shard.size(), index_.offset.size(), index_.length.size());
  index_.names = read_names(file, at, n);
  const ShardRecords shards = read_shard_records(file, at, split);
  index_.shard.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view name = index_.names[i];
    CONFLUX_REQUIRE(index_.labels[i] >= 0 && index_.labels[i] < info_.num_classes,
                    "{}: split {}: sample {} ('{}') has label {}, outside [0, {})", label, split, i,
                    name, index_.labels[i], info_.num_classes);
    CONFLUX_REQUIRE(shard[i] < shards.files.size(),
                    "{}: split {}: sample {} ('{}') is in shard {}, but there are {}", label, split,
                    i, name, shard[i], shards.files.size());
    const std::uint64_t end = shards.bytes[shard[i]];
    CONFLUX_REQUIRE(index_.length[i] <= end && index_.offset[i] <= end - index_.length[i],
                    "{}: split {}: sample {} ('{}') at offset {} (+{} bytes) lies beyond the end "
                    "of shard {} ({} bytes): a damaged index",
                    label, split, i, name, index_.offset[i], index_.length[i],
                    shards.files[shard[i]], end);
    index_.shard[i] = static_cast<std::uint16_t>(shard[i]);
  }
  info_.sources.push_back({pack::kIndexFile, sha256_file_hex(index_path)});
  for (std::size_t s = 0; s < shards.files.size(); ++s) {
    info_.sources.push_back({shards.files[s], shards.sha256[s]});
    shards_.push_back({shards.files[s], ReadOnlyFile{}, 0});
  }
  open_shards(shards.bytes, shards.file_sizes);
}

void PackedSource::open_shards(const std::vector<std::uint64_t>& shard_bytes,
                               const std::vector<std::uint64_t>& file_sizes) {
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = shards_[s];
    const fs::path path = dir_ / shard.name;
    std::error_code ec;
    CONFLUX_REQUIRE(fs::exists(path, ec), "{}: missing shard of the pack (listed in {})",
                    path.string(), pack::kIndexFile);
    shard.file = ReadOnlyFile(path);
    CONFLUX_REQUIRE(shard.file.size() == file_sizes[s],
                    "{}: {} bytes, but {} records {}: a truncated or replaced shard", path.string(),
                    shard.file.size(), pack::kIndexFile, file_sizes[s]);
    const h5::File file = h5::File::open(path);
    const h5::Dataset bytes = file.open_dataset<std::uint8_t>(pack::kShardBytes);
    bytes.require_rank(1);
    CONFLUX_REQUIRE(bytes.dims()[0] == shard_bytes[s], "{}: {} holds {} bytes, but {} records {}",
                    path.string(), pack::kShardBytes, bytes.dims()[0], pack::kIndexFile,
                    shard_bytes[s]);
    shard.data_offset = shard_bytes[s] == 0 ? 0 : bytes.file_offset();
    CONFLUX_REQUIRE(shard.data_offset + shard_bytes[s] <= shard.file.size(),
                    "{}: {} ends beyond the file", path.string(), pack::kShardBytes);
  }
}

model::Label PackedSource::label(std::size_t i) const {
  CONFLUX_CHECK(i < size(), "{}: sample {} of {}", dir_.string(), i, size());
  return index_.labels[i];
}

void PackedSource::read(std::size_t i, std::vector<std::uint8_t>& out) const {
  CONFLUX_CHECK(i < size(), "{}: sample {} of {}", dir_.string(), i, size());
  const Shard& shard = shards_[index_.shard[i]];
  shard.file.read(shard.data_offset + index_.offset[i], index_.length[i], out, where(i));
}

std::string PackedSource::where(std::size_t i) const {
  return fmt::format("{} offset {} (sample '{}')", (dir_ / shards_[index_.shard[i]].name).string(),
                     index_.offset[i], index_.names[i]);
}

std::size_t PackedSource::resident_bytes() const noexcept {
  std::size_t bytes = index_.resident_bytes() + shards_.capacity() * sizeof(Shard);
  for (const std::string& name : info_.class_names) bytes += sizeof(std::string) + name.capacity();
  return bytes;
}

}  // namespace conflux::data
