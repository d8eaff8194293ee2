#include "conflux/data/io/cifar_reader.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/data/io/file_stream.hpp"

namespace conflux::data {
namespace {

constexpr int kChannels = 3;
constexpr int kSide = 32;
constexpr std::size_t kImageBytes = kChannels * kSide * kSide;
constexpr std::size_t kRecordBytes = 1 + kImageBytes;
constexpr int kNumClasses = 10;
// Records per read: ~770 KB, so the chunk is still cached when it is hashed and copied out.
constexpr std::size_t kRecordsPerChunk = 256;

/// Checks the size of one batch file before any of it is read; returns its record count.
std::size_t check_size(const FileStream& in, std::size_t expected_records) {
  const std::string file = in.path().string();
  CONFLUX_REQUIRE(!in.gzip(),
                  "{}: is gzip-compressed; CIFAR-10 batches must be the uncompressed .bin files",
                  file);
  const std::uint64_t size = in.file_size();
  CONFLUX_REQUIRE(size > 0, "{}: empty file; expected {}-byte CIFAR-10 records", file,
                  kRecordBytes);
  if (size % kRecordBytes != 0) {
    CONFLUX_INPUT_ERROR(
        "{}: truncated: {} bytes is not a whole number of {}-byte records (last record starts "
        "at byte offset {} and has only {} bytes)",
        file, size, kRecordBytes, size / kRecordBytes * kRecordBytes, size % kRecordBytes);
  }
  const std::uint64_t records = size / kRecordBytes;
  if (expected_records != 0 && records != expected_records) {
    CONFLUX_INPUT_ERROR("{}: has {} records ({} bytes) but {} were expected ({} bytes)", file,
                        records, size, expected_records, expected_records * kRecordBytes);
  }
  return static_cast<std::size_t>(records);
}

/// Appends the records of one batch to `ds`, checking each label byte.
void read_batch(FileStream& in, std::size_t records, InMemorySplit& ds,
                std::vector<std::uint8_t>& chunk) {
  const std::string file = in.path().string();
  for (std::size_t first = 0; first < records; first += kRecordsPerChunk) {
    const std::size_t n = std::min(kRecordsPerChunk, records - first);
    const std::uint64_t chunk_offset = in.offset();
    const std::size_t want = n * kRecordBytes;
    if (const std::size_t got = in.read(std::as_writable_bytes(std::span(chunk.data(), want)));
        got < want) {
      CONFLUX_INPUT_ERROR("{}: truncated at byte offset {}: the file shrank while being read", file,
                          chunk_offset + got);
    }
    for (std::size_t r = 0; r < n; ++r) {
      const std::uint8_t* record = chunk.data() + r * kRecordBytes;
      if (record[0] >= kNumClasses) {
        CONFLUX_INPUT_ERROR("{}: label {} at byte offset {} out of range [0, {}) (record {})", file,
                            record[0], chunk_offset + r * kRecordBytes, kNumClasses, first + r);
      }
      ds.labels.push_back(record[0]);
      // The record's R, G, B planes are already CHW order.
      ds.images.insert(ds.images.end(), record + 1, record + kRecordBytes);
    }
  }
  if (in.skip_to_end() > 0) {
    CONFLUX_INPUT_ERROR("{}: grew beyond {} bytes while being read", file, records * kRecordBytes);
  }
}

}  // namespace

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {
      "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  return names;
}

InMemorySplit read_cifar10_split(const std::vector<std::filesystem::path>& files,
                                 std::size_t expected_records_per_file) {
  CONFLUX_REQUIRE(!files.empty(), "CIFAR-10: no batch files given");
  // Open and size-check every file first: a missing or short last batch fails in
  // milliseconds instead of after the others were read.
  std::vector<FileStream> streams;
  std::vector<std::size_t> records;
  streams.reserve(files.size());
  std::size_t total = 0;
  for (const auto& path : files) {
    streams.emplace_back(path);
    records.push_back(check_size(streams.back(), expected_records_per_file));
    total += records.back();
  }

  InMemorySplit ds;
  ds.name = "cifar10";
  ds.shape = {kChannels, kSide, kSide};
  ds.num_classes = kNumClasses;
  ds.class_names = cifar10_class_names();
  ds.images.reserve(total * kImageBytes);
  ds.labels.reserve(total);
  std::vector<std::uint8_t> chunk(kRecordsPerChunk * kRecordBytes);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    read_batch(streams[i], records[i], ds, chunk);
    ds.sources.push_back({files[i].filename().string(), streams[i].finish_sha256_hex()});
  }
  return ds;
}

}  // namespace conflux::data
