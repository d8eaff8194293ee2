// The pack writer: each shard's samples are spooled to a plain file, then copied into the
// reserved contiguous /bytes dataset of the shard's HDF5 file, so memory stays at one sample
// however large a shard is; index.h5 is written last.

#include "conflux/data/io/pack_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/data/io/pack_format.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::data {
namespace fs = std::filesystem;
namespace {

// A file descriptor closed on scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const std::uint8_t* data, std::size_t size, const fs::path& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    CONFLUX_CHECK(n > 0, "{}: write failed: {}", path.string(), std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void fsync_path(const fs::path& path, int flags) {
  const Fd f{::open(path.c_str(), flags | O_CLOEXEC)};
  CONFLUX_CHECK(f.fd >= 0 && ::fsync(f.fd) == 0, "{}: fsync failed: {}", path.string(),
                std::strerror(errno));
}

// Copies `bytes` bytes of `from` (from its start) to offset `at` of `to`.
void copy_range(const fs::path& from, const fs::path& to, std::uint64_t at, std::uint64_t bytes) {
  const Fd in{::open(from.c_str(), O_RDONLY | O_CLOEXEC)};
  const Fd out{::open(to.c_str(), O_WRONLY | O_CLOEXEC)};
  CONFLUX_CHECK(in.fd >= 0 && out.fd >= 0, "{}: cannot open it for copying: {}", to.string(),
                std::strerror(errno));
  std::vector<std::uint8_t> buffer(std::size_t{8} << 20);
  for (std::uint64_t done = 0; done < bytes;) {
    const ssize_t n =
        ::pread(in.fd, buffer.data(), std::min<std::uint64_t>(buffer.size(), bytes - done),
                static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    CONFLUX_CHECK(n > 0, "{}: read failed: {}", from.string(), std::strerror(errno));
    for (ssize_t put = 0; put < n;) {
      const ssize_t w = ::pwrite(out.fd, buffer.data() + put, static_cast<std::size_t>(n - put),
                                 static_cast<off_t>(at + done + static_cast<std::uint64_t>(put)));
      if (w < 0 && errno == EINTR) continue;
      CONFLUX_CHECK(w > 0, "{}: write failed: {}", to.string(), std::strerror(errno));
      put += w;
    }
    done += static_cast<std::uint64_t>(n);
  }
}

// One split's index as it is written, and its shards so far.
struct SplitWrite {
  std::vector<model::Label> labels;
  std::vector<std::uint32_t> shard, length;
  std::vector<std::uint64_t> offset, name_end, shard_bytes, shard_file_size;
  std::vector<std::uint8_t> name_bytes;
  std::vector<std::string> shard_files, shard_sha256;
};

// Packs one split's samples into shards in `dir`.
class SplitPacker {
 public:
  SplitPacker(const fs::path& dir, const PackSplit& split, const PackOptions& options)
      : dir_(dir), split_(split), options_(options), spool_(dir / (split.name + ".spool")) {}

  SplitWrite run() {
    std::vector<std::uint8_t> sample;
    const SampleSource& source = *split_.source;
    for (std::size_t i = 0; i < source.size(); ++i) {
      source.read(i, sample);
      add(i, sample);
      if (spooled_ >= options_.shard_bytes) finish_shard();
    }
    if (spooled_ > 0 || out_.shard_files.empty()) finish_shard();
    fs::remove(spool_);
    return std::move(out_);
  }

 private:
  void add(std::size_t i, const std::vector<std::uint8_t>& sample) {
    const SampleSource& source = *split_.source;
    CONFLUX_REQUIRE(sample.size() <= std::numeric_limits<std::uint32_t>::max(),
                    "{}: {} bytes; a packed sample holds at most 4 GiB", source.where(i),
                    sample.size());
    if (spool_fd_ < 0) {
      spool_fd_ = ::open(spool_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      CONFLUX_CHECK(spool_fd_ >= 0, "{}: cannot create it: {}", spool_.string(),
                    std::strerror(errno));
    }
    write_all(spool_fd_, sample.data(), sample.size(), spool_);
    out_.labels.push_back(source.label(i));
    out_.shard.push_back(static_cast<std::uint32_t>(out_.shard_files.size()));
    out_.offset.push_back(spooled_);
    out_.length.push_back(static_cast<std::uint32_t>(sample.size()));
    const std::string name = split_.sample_name ? split_.sample_name(i) : source.where(i);
    out_.name_bytes.insert(out_.name_bytes.end(), name.begin(), name.end());
    out_.name_end.push_back(out_.name_bytes.size());
    spooled_ += sample.size();
  }

  void finish_shard() {
    const std::size_t number = out_.shard_files.size();
    CONFLUX_REQUIRE(number < pack::kMaxShards,
                    "split {}: more than {} shards; use a larger "
                    "--shard-mb",
                    split_.name, pack::kMaxShards);
    if (spool_fd_ >= 0) ::close(std::exchange(spool_fd_, -1));
    const std::string name = pack::shard_file_name(split_.name, number);
    const fs::path path = dir_ / name;
    auto file = h5::File::create(path, {.no_object_times = true});
    const std::uint64_t at = file.reserve_bytes(pack::kShardBytes, spooled_);
    file.close();
    if (spooled_ > 0) copy_range(spool_, path, at, spooled_);
    fsync_path(path, O_RDONLY);
    out_.shard_files.push_back(name);
    out_.shard_sha256.push_back(sha256_file_hex(path));
    out_.shard_bytes.push_back(spooled_);
    out_.shard_file_size.push_back(fs::file_size(path));
    spooled_ = 0;
  }

  const fs::path& dir_;
  const PackSplit& split_;
  const PackOptions& options_;
  fs::path spool_;
  int spool_fd_ = -1;
  std::uint64_t spooled_ = 0;
  SplitWrite out_;
};

template <typename T>
void write_vector(h5::File& file, const std::string& path, const std::vector<T>& values) {
  const hsize_t dims[1] = {values.size()};
  file.write(path, dims, values.data());
}

void write_split_index(h5::File& index, const std::string& split, const SplitWrite& w) {
  namespace d = pack::dset;
  index.create_group("/" + split);
  const std::string at = "/" + split + "/";
  write_vector(index, at + d::kLabels, w.labels);
  write_vector(index, at + d::kShard, w.shard);
  write_vector(index, at + d::kOffset, w.offset);
  write_vector(index, at + d::kLength, w.length);
  write_vector(index, at + d::kNameBytes, w.name_bytes);
  write_vector(index, at + d::kNameEnd, w.name_end);
  const hsize_t shards[1] = {w.shard_files.size()};
  index.write_strings(at + d::kShardFiles, shards, w.shard_files);
  index.write_strings(at + d::kShardSha256, shards, w.shard_sha256);
  write_vector(index, at + d::kShardBytes, w.shard_bytes);
  write_vector(index, at + d::kShardFileSize, w.shard_file_size);
}

void check_splits(const fs::path& out, const std::vector<PackSplit>& splits) {
  CONFLUX_REQUIRE(!splits.empty(), "{}: nothing to pack (no splits)", out.string());
  const SourceInfo& first = splits.front().source->info();
  for (const PackSplit& split : splits) {
    const SourceInfo& info = split.source->info();
    CONFLUX_REQUIRE(info.format == SampleFormat::kEncoded,
                    "split {}: a pack holds encoded image files, but source '{}' gives pixels",
                    split.name, info.name);
    CONFLUX_REQUIRE(info.class_names == first.class_names,
                    "split {} has other classes than split {}; a pack has one class list",
                    split.name, splits.front().name);
    CONFLUX_REQUIRE(!split.name.empty() && split.name.find('/') == std::string::npos,
                    "'{}' cannot name a split", split.name);
  }
}

PackSummary write_pack_files(const fs::path& dir, const std::vector<PackSplit>& splits,
                             const PackOptions& options) {
  PackSummary summary;
  std::vector<SplitWrite> written;
  for (const PackSplit& split : splits) {
    written.push_back(SplitPacker(dir, split, options).run());
    summary.samples += written.back().labels.size();
    summary.shards += written.back().shard_files.size();
    for (const std::uint64_t b : written.back().shard_bytes) summary.bytes += b;
  }
  // The index last: a directory without it is no pack.
  const fs::path index_path = dir / pack::kIndexFile;
  auto index = h5::File::create(index_path, {.no_object_times = true});
  const SourceInfo& info = splits.front().source->info();
  index.write_attribute("/", pack::attr::kFormatVersion, pack::kFormatVersion);
  index.write_string_attribute("/", pack::attr::kDataset, info.name,
                               h5::StringStorage::kVariableLength);
  index.write_attribute("/", pack::attr::kNumClasses, std::int32_t{info.num_classes});
  index.write_strings_attribute("/", pack::attr::kClassNames, info.class_names);
  std::vector<std::string> names;
  for (const PackSplit& split : splits) names.push_back(split.name);
  index.write_strings_attribute("/", pack::attr::kSplits, names);
  for (std::size_t s = 0; s < splits.size(); ++s) {
    write_split_index(index, splits[s].name, written[s]);
  }
  index.close();
  fsync_path(index_path, O_RDONLY);
  return summary;
}

}  // namespace

PackSummary write_pack(const fs::path& out, const std::vector<PackSplit>& splits,
                       const PackOptions& options) {
  check_splits(out, splits);
  CONFLUX_REQUIRE(options.shard_bytes > 0, "{}: the shard size must be positive", out.string());
  std::error_code ec;
  CONFLUX_REQUIRE(!fs::exists(out, ec) || (fs::is_directory(out, ec) && fs::is_empty(out, ec)),
                  "{}: already exists and is not an empty directory; choose another --out",
                  out.string());
  const fs::path parent = fs::absolute(out).parent_path();
  const fs::path temp = parent / fmt::format(".{}.partial-{}", out.filename().string(), ::getpid());
  fs::remove_all(temp, ec);
  fs::create_directories(temp);
  try {
    const PackSummary summary = write_pack_files(temp, splits, options);
    fs::rename(temp, out);
    fsync_path(parent, O_RDONLY | O_DIRECTORY);
    return summary;
  } catch (...) {
    fs::remove_all(temp, ec);
    throw;
  }
}

}  // namespace conflux::data
