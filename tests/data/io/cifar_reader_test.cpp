#include "conflux/data/io/cifar_reader.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "../../support/byte_files.hpp"
#include "../../support/temp_dir.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kRecord = 3073;

using conflux::testing::TempDir;

/// Pixel c of record `seed`'s image, so every byte of every record is distinguishable.
std::uint8_t pixel(int seed, std::size_t c) {
  return static_cast<std::uint8_t>((c * 13 + static_cast<std::size_t>(seed) * 101) & 0xff);
}

/// CIFAR records with the given labels; record i's image is pixel(seed0 + i, .).
std::string records(const std::vector<int>& labels, int seed0) {
  std::string bytes;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    bytes.push_back(static_cast<char>(labels[i]));
    for (std::size_t c = 0; c < 3072; ++c) {
      bytes.push_back(static_cast<char>(pixel(seed0 + static_cast<int>(i), c)));
    }
  }
  return bytes;
}

using conflux::testing::expect_input_error;

class CifarReaderTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_.path() / name;
    conflux::testing::write_plain(path, bytes);
    return path;
  }
  TempDir dir_;
};

TEST_F(CifarReaderTest, ClassNames) {
  EXPECT_EQ(cifar10_class_names(),
            (std::vector<std::string>{"airplane", "automobile", "bird", "cat", "deer", "dog",
                                      "frog", "horse", "ship", "truck"}));
}

TEST_F(CifarReaderTest, ReadsAndConcatenatesBatches) {
  const auto a = write("a.bin", records({3, 0, 9}, 0));
  const auto b = write("b.bin", records({5, 1, 2}, 3));
  const InMemorySplit ds = read_cifar10_split({a, b}, 3);
  EXPECT_EQ(ds.name, "cifar10");
  EXPECT_EQ(ds.shape, (ImageShape{3, 32, 32}));
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.class_names, cifar10_class_names());
  ASSERT_EQ(ds.size(), 6u);
  EXPECT_EQ(ds.labels, (std::vector<model::Label>{3, 0, 9, 5, 1, 2}));
  ASSERT_EQ(ds.images.size(), 6u * 3072);
  for (std::size_t i = 0; i < 6; ++i) {
    const auto image = ds.image(i);
    for (std::size_t c = 0; c < 3072; ++c) {
      ASSERT_EQ(image[c], pixel(static_cast<int>(i), c)) << "image " << i << " byte " << c;
    }
  }
  ASSERT_EQ(ds.sources.size(), 2u);
  EXPECT_EQ(ds.sources[0], (SourceFile{"a.bin", sha256_file_hex(a)}));
  EXPECT_EQ(ds.sources[1], (SourceFile{"b.bin", sha256_file_hex(b)}));
}

TEST_F(CifarReaderTest, ReadsFilesLargerThanOneChunk) {
  std::vector<int> labels(600);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>(i % 10);
  const auto a = write("a.bin", records(labels, 0));
  const InMemorySplit ds = read_cifar10_split({a}, 0);
  ASSERT_EQ(ds.size(), 600u);
  EXPECT_EQ(ds.labels[599], 9);
  EXPECT_EQ(ds.image(599)[3071], pixel(599, 3071));
  EXPECT_EQ(ds.sources[0].sha256, sha256_file_hex(a));
}

TEST_F(CifarReaderTest, TruncatedFile) {
  const auto a = write("a.bin", records({1, 2, 3}, 0).substr(0, 3 * kRecord - 1));
  expect_input_error(
      [&] { read_cifar10_split({a}, 0); },
      {a.string(), "truncated: 9218 bytes is not a whole number of 3073-byte records",
       "last record starts at byte offset 6146"});
}

TEST_F(CifarReaderTest, LabelOutOfRange) {
  const auto a = write("a.bin", records({1, 2, 3}, 0));
  const auto b = write("b.bin", records({4, 10, 6}, 0));
  expect_input_error(
      [&] {
        read_cifar10_split({a, b}, 3);
      },
      {b.string(), "label 10 at byte offset 3073 out of range [0, 10)"});
}

TEST_F(CifarReaderTest, RecordCountMismatch) {
  const auto a = write("a.bin", records({1, 2, 3}, 0));
  const auto b = write("b.bin", records({4, 5}, 0));
  expect_input_error(
      [&] {
        read_cifar10_split({a, b}, 3);
      },
      {b.string(), "has 2 records", "3 were expected"});
  EXPECT_EQ(read_cifar10_split({a, b}, 0).size(), 5u);  // 0 disables the check
}

TEST_F(CifarReaderTest, MissingEmptyAndCompressedFiles) {
  const auto a = write("a.bin", records({1}, 0));
  const auto missing = dir_.path() / "missing.bin";
  expect_input_error(
      [&] {
        read_cifar10_split({a, missing}, 0);
      },
      {missing.string(), "cannot open"});
  const auto empty = write("empty.bin", "");
  expect_input_error([&] { read_cifar10_split({empty}, 0); }, {empty.string(), "empty"});
  const auto gz = dir_.path() / "a.bin.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string bytes = records({1}, 0);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  expect_input_error([&] { read_cifar10_split({gz}, 0); }, {gz.string(), "gzip"});
}

}  // namespace
}  // namespace conflux::data
