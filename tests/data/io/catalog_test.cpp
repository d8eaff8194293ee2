#include "conflux/data/io/catalog.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>

#include "../../support/byte_files.hpp"
#include "../../support/data_dir.hpp"
#include "../../support/temp_dir.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;

using conflux::testing::TempDir;

using conflux::testing::expect_input_error;

using conflux::testing::be32;

using conflux::testing::write_gz;

/// A tiny MNIST-layout directory: `n` 2x2 images per split.
void write_fake_idx_dir(const fs::path& dir, std::uint32_t n) {
  fs::create_directories(dir);
  for (const char* split : {"train", "t10k"}) {
    write_gz(dir / fmt::format("{}-images-idx3-ubyte.gz", split),
             be32(0x803) + be32(n) + be32(2) + be32(2) + std::string(4 * n, '\x11'));
    write_gz(dir / fmt::format("{}-labels-idx1-ubyte.gz", split),
             be32(0x801) + be32(n) + std::string(n, '\x03'));
  }
}

TEST(Catalog, KnownNames) {
  EXPECT_EQ(known_dataset_names(), (std::vector<std::string>{"mnist", "fashion-mnist", "cifar10"}));
}

TEST(Catalog, UnknownNameListsKnownOnes) {
  TempDir dir;
  expect_input_error([&] { load_dataset("imagenet", dir.path()); },
                     {"imagenet", "mnist, fashion-mnist, cifar10"});
}

TEST(Catalog, MissingDirectoryNamesPathAndHowToFixIt) {
  TempDir dir;
  for (const auto& [name, sub_dir] :
       {std::pair{"mnist", "mnist"}, std::pair{"fashion-mnist", "fashion-mnist"},
        std::pair{"cifar10", "cifar-10"}}) {
    expect_input_error([&] { load_dataset(name, dir.path()); },
                       {(dir.path() / sub_dir).string(), "data.dir", "CONFLUX_DATA"});
  }
}

TEST(Catalog, MissingFileNamesFullPath) {
  TempDir dir;
  write_fake_idx_dir(dir.path() / "mnist", 2);
  const fs::path missing = dir.path() / "mnist" / "t10k-labels-idx1-ubyte.gz";
  fs::remove(missing);
  expect_input_error([&] { load_dataset("mnist", dir.path()); },
                     {missing.string(), "data.dir", "CONFLUX_DATA"});
  fs::create_directories(dir.path() / "cifar-10");
  expect_input_error([&] { load_dataset("cifar10", dir.path()); },
                     {(dir.path() / "cifar-10" / "data_batch_1.bin").string()});
}

TEST(Catalog, LoadsIdxDatasetsWithTheirClassNames) {
  TempDir dir;
  write_fake_idx_dir(dir.path() / "mnist", 3);
  write_fake_idx_dir(dir.path() / "fashion-mnist", 2);
  const InMemorySplits mnist = load_dataset("mnist", dir.path());
  EXPECT_EQ(mnist.train.name, "mnist");
  EXPECT_EQ(mnist.train.size(), 3u);
  EXPECT_EQ(mnist.test.size(), 3u);
  EXPECT_EQ(mnist.train.class_names,
            (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  ASSERT_EQ(mnist.test.sources.size(), 2u);
  EXPECT_EQ(mnist.test.sources[0].name, "t10k-images-idx3-ubyte.gz");
  const InMemorySplits fashion = load_dataset("fashion-mnist", dir.path());
  EXPECT_EQ(fashion.test.name, "fashion-mnist");
  EXPECT_EQ(fashion.train.class_names,
            (std::vector<std::string>{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                      "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}));
}

TEST(Catalog, CifarBatchesMustHoldTenThousandRecords) {
  TempDir dir;
  const fs::path cifar = dir.path() / "cifar-10";
  fs::create_directories(cifar);
  std::string record(3073, '\0');
  for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                           "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}) {
    std::ofstream(cifar / name, std::ios::binary) << record;
  }
  expect_input_error([&] { load_dataset("cifar10", dir.path()); },
                     {(cifar / "data_batch_1.bin").string(), "has 1 records", "10000"});
}

// ---------------------------------------------------------------------------------------------
// The real datasets, when present ($CONFLUX_DATA, else the per-user data directory).

/// file name -> sha256 from a `sha256sum` output file.
std::map<std::string, std::string> read_sha256sums(const fs::path& path) {
  std::map<std::string, std::string> sums;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string digest, name;
    if (fields >> digest >> name) sums[name.starts_with('*') ? name.substr(1) : name] = digest;
  }
  return sums;
}

void expect_sources_match_sha256sums(const InMemorySplits& splits, const fs::path& dir) {
  const auto sums = read_sha256sums(dir / "SHA256SUMS");
  ASSERT_FALSE(sums.empty()) << "no SHA256SUMS in " << dir;
  for (const InMemorySplit* ds : {&splits.train, &splits.test}) {
    ASSERT_FALSE(ds->sources.empty());
    for (const auto& source : ds->sources) {
      ASSERT_TRUE(sums.contains(source.name)) << source.name;
      EXPECT_EQ(source.sha256, sums.at(source.name)) << source.name;
    }
  }
}

class RealData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = conflux::testing::data_dir();
    if (!fs::is_directory(dir_)) {
      GTEST_SKIP() << "data directory " << dir_
                   << " not found; set CONFLUX_DATA to run the real-data tests";
    }
  }
  fs::path dir_;
};

TEST_F(RealData, Mnist) {
  const InMemorySplits s = load_dataset("mnist", dir_);
  EXPECT_EQ(s.train.size(), 60000u);
  EXPECT_EQ(s.test.size(), 10000u);
  EXPECT_EQ(s.train.shape, (ImageShape{1, 28, 28}));
  EXPECT_EQ(s.train.images.size(), 60000u * 784);
  expect_sources_match_sha256sums(s, dir_ / "mnist");
}

TEST_F(RealData, FashionMnist) {
  const InMemorySplits s = load_dataset("fashion-mnist", dir_);
  EXPECT_EQ(s.train.size(), 60000u);
  EXPECT_EQ(s.test.size(), 10000u);
  EXPECT_EQ(s.test.shape, (ImageShape{1, 28, 28}));
  EXPECT_EQ(s.train.class_names.at(9), "Ankle boot");
  expect_sources_match_sha256sums(s, dir_ / "fashion-mnist");
}

TEST_F(RealData, Cifar10) {
  const InMemorySplits s = load_dataset("cifar10", dir_);
  ASSERT_EQ(s.train.size(), 50000u);
  ASSERT_EQ(s.test.size(), 10000u);
  EXPECT_EQ(s.train.shape, (ImageShape{3, 32, 32}));
  ASSERT_EQ(s.train.sources.size(), 5u);
  EXPECT_EQ(s.train.sources[4].name, "data_batch_5.bin");
  expect_sources_match_sha256sums(s, dir_ / "cifar-10");

  // Exact integer sums, so the means must match the published values to the last digit.
  std::array<std::uint64_t, 3> sums{};
  for (std::size_t i = 0; i < s.train.size(); ++i) {
    const auto image = s.train.image(i);
    for (std::size_t c = 0; c < 3; ++c) {
      for (std::size_t p = 0; p < 1024; ++p) sums[c] += image[c * 1024 + p];
    }
  }
  const double pixels = 50000.0 * 1024;
  EXPECT_DOUBLE_EQ(static_cast<double>(sums[0]) / pixels, 125.306918046875);
  EXPECT_DOUBLE_EQ(static_cast<double>(sums[1]) / pixels, 122.950394140625);
  EXPECT_DOUBLE_EQ(static_cast<double>(sums[2]) / pixels, 113.86538318359375);

  std::array<int, 10> per_class{};
  for (model::Label label : s.test.labels) ++per_class[label];
  for (int count : per_class) EXPECT_EQ(count, 1000);
}

}  // namespace
}  // namespace conflux::data
