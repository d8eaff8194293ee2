#include "conflux/data/io/idx_reader.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <string>

#include "../../support/byte_files.hpp"
#include "../../support/temp_dir.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;

using conflux::testing::TempDir;

using conflux::testing::be32;

std::string pixels(std::size_t n) {
  std::string p(n, '\0');
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>((i * 7 + 3) & 0xff);
  return p;
}

std::string idx_images(std::uint32_t n, std::uint32_t h, std::uint32_t w, const std::string& px) {
  return be32(0x00000803) + be32(n) + be32(h) + be32(w) + px;
}

std::string idx_labels(const std::string& labels) {
  return be32(0x00000801) + be32(static_cast<std::uint32_t>(labels.size())) + labels;
}

using conflux::testing::write_plain;

using conflux::testing::write_gz;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> digit_names() {
  return {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
}

using conflux::testing::expect_input_error;

class IdxReaderTest : public ::testing::TestWithParam<bool> {
 protected:
  bool gz() const { return GetParam(); }
  /// Writes the file compressed or not, per the test parameter.
  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_.path() / (name + (gz() ? ".gz" : ""));
    if (gz()) {
      write_gz(path, bytes);
    } else {
      write_plain(path, bytes);
    }
    return path;
  }
  /// "byte offset N" as the reader words it for this compression.
  std::string at(std::uint64_t offset) const {
    return fmt::format("byte offset {}{}", offset, gz() ? " (decompressed)" : "");
  }
  InMemorySplit read(const fs::path& images, const fs::path& labels) {
    return read_idx_split(images, labels, "test-set", digit_names());
  }

  TempDir dir_;
};

TEST_P(IdxReaderTest, ReadsValidFiles) {
  const std::string px = pixels(3 * 4 * 5);
  const auto images = write("images", idx_images(3, 4, 5, px));
  const auto labels = write("labels", idx_labels({0, 9, 4}));
  const InMemorySplit ds = read(images, labels);
  EXPECT_EQ(ds.name, "test-set");
  EXPECT_EQ(ds.shape, (ImageShape{1, 4, 5}));
  EXPECT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.class_names, digit_names());
  EXPECT_EQ(std::string(ds.images.begin(), ds.images.end()), px);
  EXPECT_EQ(ds.labels, (std::vector<model::Label>{0, 9, 4}));
  EXPECT_EQ(ds.image(2)[0], static_cast<std::uint8_t>(px[40]));
  ASSERT_EQ(ds.sources.size(), 2u);
  EXPECT_EQ(ds.sources[0].name, images.filename().string());
  EXPECT_EQ(ds.sources[0].sha256, sha256_file_hex(images));
  EXPECT_EQ(ds.sources[1].name, labels.filename().string());
  EXPECT_EQ(ds.sources[1].sha256, sha256_file_hex(labels));
}

TEST_P(IdxReaderTest, ReadsFilesLargerThanTheReadBuffers) {
  // 40 images of 100x100: several 256 KiB input buffers, compressed or not.
  const std::string px = pixels(40 * 100 * 100);
  const auto images = write("images", idx_images(40, 100, 100, px));
  const auto labels = write("labels", idx_labels(std::string(40, '\x07')));
  const InMemorySplit ds = read(images, labels);
  EXPECT_EQ(std::string(ds.images.begin(), ds.images.end()), px);
  EXPECT_EQ(ds.sources[0].sha256, sha256_file_hex(images));
}

TEST_P(IdxReaderTest, BadMagicNumber) {
  const auto images = write("images", idx_images(2, 2, 2, pixels(8)));
  const auto labels = write("labels", be32(0x00000802) + be32(2) + std::string(2, '\0'));
  expect_input_error([&] { read(images, labels); },
                     {labels.string(), "bad magic number 0x00000802 at " + at(0),
                      "(expected 0x00000801, IDX labels)"});
  const auto swapped = write("swapped", idx_labels({1, 2}));
  expect_input_error([&] { read(swapped, labels); },
                     {swapped.string(), "bad magic number 0x00000801 at " + at(0),
                      "expected 0x00000803, IDX images"});
}

TEST_P(IdxReaderTest, WrongDimensions) {
  const auto images = write("images", idx_images(2, 2, 2, pixels(8)));
  // A labels file declaring 3 dimensions (it is an images magic).
  const auto labels = write("labels", be32(0x00000803) + be32(2) + std::string(10, '\0'));
  expect_input_error([&] { read(images, labels); },
                     {labels.string(), at(0), "declares 3 dimensions instead of 1"});
  const auto no_height = write("no-height", idx_images(2, 0, 2, ""));
  const auto good_labels = write("good-labels", idx_labels({1, 2}));
  expect_input_error([&] { read(no_height, good_labels); },
                     {no_height.string(), "image height 0 at " + at(8)});
}

TEST_P(IdxReaderTest, TruncatedPixels) {
  const auto images = write("images", idx_images(3, 4, 5, pixels(50)));
  const auto labels = write("labels", idx_labels({1, 2, 3}));
  expect_input_error([&] { read(images, labels); },
                     {images.string(), "truncated at " + at(66), "expected 60 bytes of pixels",
                      "after the 16-byte header"});
}

TEST_P(IdxReaderTest, TruncatedHeaderAndLabels) {
  const auto short_header = write("short", idx_images(3, 4, 5, "").substr(0, 10));
  const auto labels = write("labels", idx_labels({1, 2, 3}));
  expect_input_error(
      [&] { read(short_header, labels); },
      {short_header.string(), "truncated at " + at(10), "16-byte IDX images header"});
  const auto images = write("images", idx_images(3, 1, 1, pixels(3)));
  const auto short_labels = write("short-labels", idx_labels({1, 2, 3}).substr(0, 10));
  expect_input_error(
      [&] { read(images, short_labels); },
      {short_labels.string(), "truncated at " + at(10), "expected 3 bytes of labels"});
}

TEST_P(IdxReaderTest, TrailingBytes) {
  const auto images = write("images", idx_images(3, 4, 5, pixels(63)));
  const auto labels = write("labels", idx_labels({1, 2, 3}));
  expect_input_error([&] { read(images, labels); },
                     {images.string(), "3 trailing bytes at " + at(76)});
  const auto good_images = write("good-images", idx_images(3, 4, 5, pixels(60)));
  const auto long_labels = write("long-labels", idx_labels({1, 2, 3}) + "x");
  expect_input_error([&] { read(good_images, long_labels); },
                     {long_labels.string(), "1 trailing bytes at " + at(11)});
}

TEST_P(IdxReaderTest, CountMismatch) {
  const auto images = write("images", idx_images(3, 2, 2, pixels(12)));
  const auto labels = write("labels", idx_labels({1, 2}));
  expect_input_error([&] { read(images, labels); },
                     {"image file " + images.string() + " has 3 records",
                      "label file " + labels.string() + " has 2"});
}

TEST_P(IdxReaderTest, LabelOutOfRange) {
  const auto images = write("images", idx_images(3, 2, 2, pixels(12)));
  const auto labels = write("labels", idx_labels({1, 12, 3}));
  expect_input_error([&] { read(images, labels); },
                     {labels.string(), "label 12 at " + at(9) + " out of range [0, 10)"});
}

TEST_P(IdxReaderTest, MissingFile) {
  const auto labels = write("labels", idx_labels({1}));
  const fs::path missing = dir_.path() / "no-such-images";
  expect_input_error([&] { read(missing, labels); }, {missing.string(), "cannot open"});
  expect_input_error([&] { read(dir_.path(), labels); }, {dir_.path().string(), "directory"});
}

INSTANTIATE_TEST_SUITE_P(PlainAndGzip, IdxReaderTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Gzip" : "Plain"; });

class IdxGzipTest : public ::testing::Test {
 protected:
  fs::path labels() {
    const auto path = dir_.path() / "labels.gz";
    write_gz(path, idx_labels({1, 2, 3}));
    return path;
  }
  /// Bytes of a gzip images file holding 3 noisy images of 64x64 (Huffman-coded, not stored
  /// verbatim, so damage in the middle breaks decoding).
  std::string images_gz() {
    std::string px(3 * 64 * 64, '\0');
    std::uint32_t x = 1;
    for (auto& c : px) {
      x = x * 1664525u + 1013904223u;
      c = static_cast<char>(x >> 28);
    }
    const auto path = dir_.path() / "tmp.gz";
    write_gz(path, idx_images(3, 64, 64, px));
    auto bytes = slurp(path);
    fs::remove(path);
    return bytes;
  }
  TempDir dir_;
};

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A header claiming 2^31 records over 1 MB of pixels: the error names the claimed and the
// possible count, and memory follows what the stream holds (the buffer used to be sized from
// the claim, up to 1032 x the compressed size: 1 GB here).
TEST_F(IdxGzipTest, ACorruptRecordCountCostsNoMoreMemoryThanTheFileHolds) {
  std::string px(1024 * 1024, '\0');
  std::uint32_t x = 7;
  for (auto& c : px) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  const auto images = dir_.path() / "images.gz";
  const auto labels = dir_.path() / "labels.gz";
  write_gz(images, idx_images(1u << 31, 32, 32, px));
  write_gz(labels, be32(0x00000801) + be32(1u << 31) + std::string(1024, '\1'));
  const long before = peak_rss_kb();
  expect_input_error([&] { read_idx_split(images, labels, "t", digit_names()); },
                     {images.string(), "room for 1024 of the 2147483648 images"});
  EXPECT_LT(peak_rss_kb() - before, 200 * 1024) << "KB of peak RSS growth";
}

TEST_F(IdxGzipTest, CorruptCompressedData) {
  std::string gz = images_gz();
  ASSERT_GT(gz.size(), 1000u);
  for (std::size_t i = gz.size() / 2; i < gz.size() / 2 + 16; ++i) gz[i] = static_cast<char>(0xff);
  const auto images = dir_.path() / "images.gz";
  write_plain(images, gz);
  expect_input_error([&] { read_idx_split(images, labels(), "t", digit_names()); },
                     {images.string(), "corrupt gzip", "compressed byte offset"});
}

TEST_F(IdxGzipTest, CorruptChecksum) {
  std::string gz = images_gz();
  gz[gz.size() - 6] = static_cast<char>(gz[gz.size() - 6] ^ 0x55);  // inside the CRC-32
  const auto images = dir_.path() / "images.gz";
  write_plain(images, gz);
  expect_input_error([&] { read_idx_split(images, labels(), "t", digit_names()); },
                     {images.string(), "corrupt gzip"});
}

TEST_F(IdxGzipTest, TruncatedCompressedStream) {
  const std::string gz = images_gz();
  const auto images = dir_.path() / "images.gz";
  write_plain(images, gz.substr(0, gz.size() / 2));
  expect_input_error([&] { read_idx_split(images, labels(), "t", digit_names()); },
                     {images.string(), "corrupt gzip file", "ends unexpectedly"});
}

TEST_F(IdxGzipTest, GarbageAfterTheGzipStream) {
  const auto images = dir_.path() / "images.gz";
  const std::string gz = images_gz();
  write_plain(images, gz + "junk");
  expect_input_error([&] { read_idx_split(images, labels(), "t", digit_names()); },
                     {images.string(), "trailing garbage after the gzip stream",
                      "compressed byte offset " + std::to_string(gz.size())});
}

TEST_F(IdxGzipTest, ConcatenatedMembersAreOneStream) {
  // `cat a.gz b.gz` is a valid gzip file of the concatenated contents.
  const std::string all = idx_images(3, 64, 64, pixels(3 * 64 * 64));
  const auto first = dir_.path() / "first.gz";
  const auto second = dir_.path() / "second.gz";
  write_gz(first, all.substr(0, 1000));
  write_gz(second, all.substr(1000));
  const auto images = dir_.path() / "images.gz";
  write_plain(images, slurp(first) + slurp(second));
  const InMemorySplit ds = read_idx_split(images, labels(), "t", digit_names());
  EXPECT_EQ(std::string(ds.images.begin(), ds.images.end()), pixels(3 * 64 * 64));
}

}  // namespace
}  // namespace conflux::data
