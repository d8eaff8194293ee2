#include <gtest/gtest.h>
#include <hdf5.h>

#include <chrono>
#include <thread>

#include "../../support/image_folder.hpp"
#include "../../support/temp_dir.hpp"
#include "conflux/data/io/image_folder_source.hpp"
#include "conflux/data/io/pack_format.hpp"
#include "conflux/data/io/pack_writer.hpp"
#include "conflux/data/io/packed_source.hpp"
#include "conflux/hdf5/handle.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;
using conflux::testing::expect_input_error;
using conflux::testing::make_image_folder;
using conflux::testing::read_file;
using conflux::testing::TempDir;

// Packs root's train and val splits into `out` with shards of `shard_bytes`.
PackSummary pack_folder(const fs::path& root, const fs::path& out, std::uint64_t shard_bytes) {
  const ImageFolderSource train(root, "train", 3), val(root, "val", 3);
  auto name_of = [](const ImageFolderSource& s) {
    return [&s](std::size_t i) { return s.relative_name(i); };
  };
  return write_pack(out, {{"train", &train, name_of(train)}, {"val", &val, name_of(val)}},
                    {.shard_bytes = shard_bytes});
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Pack, PackedSamplesAreTheFolderSamples) {
  TempDir dir;
  make_image_folder(dir.path() / "images");
  // Samples of 49 to 59 bytes: a shard closes once it holds 100 bytes or more, so train's
  // go 2 + 2 + 1 and val's 3 + 2.
  const PackSummary summary = pack_folder(dir.path() / "images", dir.path() / "pack", 100);
  EXPECT_EQ(summary.samples, 10u);
  EXPECT_EQ(summary.shards, 5u);
  EXPECT_EQ(files_in(dir.path() / "pack"),
            (std::vector<std::string>{"index.h5", "train-00000.h5", "train-00001.h5",
                                      "train-00002.h5", "val-00000.h5", "val-00001.h5"}));
  for (const std::string split : {"train", "val"}) {
    const ImageFolderSource folder(dir.path() / "images", split, 3);
    const PackedSource packed(dir.path() / "pack", split, 1);
    EXPECT_EQ(packed.info().format, SampleFormat::kEncoded);
    EXPECT_EQ(packed.info().shape, (ImageShape{1, 0, 0}));
    EXPECT_EQ(packed.info().class_names, folder.info().class_names);
    EXPECT_EQ(packed.info().num_classes, 3);
    ASSERT_EQ(packed.size(), folder.size());
    std::vector<std::uint8_t> a, b;
    for (std::size_t i = 0; i < folder.size(); ++i) {
      folder.read(i, a);
      packed.read(i, b);
      EXPECT_EQ(a, b) << i;
      EXPECT_EQ(packed.label(i), folder.label(i));
    }
    const auto& sources = packed.info().sources;
    ASSERT_EQ(sources.size(), split == "train" ? 4u : 3u);  // index.h5 and the shards
    EXPECT_EQ(sources[0].name, "index.h5");
    EXPECT_EQ(sources[1].name, split + "-00000.h5");
  }
  const PackedSource train(dir.path() / "pack", "train", 3);
  EXPECT_EQ(train.where(1),
            fmt::format("{} offset {} (sample 'cat/b.jpg')",
                        (dir.path() / "pack/train-00000.h5").string(),
                        conflux::testing::image_bytes("train", "cat", "a.PNG").size()));
  EXPECT_NE(train.where(3).find("train-00001.h5 offset "), std::string::npos);
  EXPECT_NE(train.where(3).find("(sample 'emu/l.jpg')"), std::string::npos);
  EXPECT_GT(train.resident_bytes(), 0u);
}

TEST(Pack, PackingTwiceGivesIdenticalBytes) {
  TempDir dir;
  make_image_folder(dir.path() / "images");
  pack_folder(dir.path() / "images", dir.path() / "one", 1 << 20);
  // HDF5 stores object times in whole seconds: without the wait, times would match anyway.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  pack_folder(dir.path() / "images", dir.path() / "two", 1 << 20);
  const auto names = files_in(dir.path() / "one");
  ASSERT_EQ(names, files_in(dir.path() / "two"));
  for (const std::string& name : names) {
    const std::string a = read_file(dir.path() / "one" / name);
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == read_file(dir.path() / "two" / name)) << name << " differs";
  }
  // The identity is a function of the bytes, so it agrees too.
  EXPECT_EQ(PackedSource(dir.path() / "one", "train", 3).info().sources,
            PackedSource(dir.path() / "two", "train", 3).info().sources);
}

// Overwrites element `index` of the uint64 dataset `object` in `file`.
void poke_u64(const fs::path& file, const char* object, hsize_t index, std::uint64_t value) {
  const auto lock = h5::lock_library();
  const h5::Handle f{H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)};
  ASSERT_TRUE(f);
  const h5::Handle d{H5Dopen2(f.get(), object, H5P_DEFAULT)};
  ASSERT_TRUE(d);
  const h5::Handle space{H5Dget_space(d.get())};
  const hsize_t one = 1;
  ASSERT_GE(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &index, nullptr, &one, nullptr), 0);
  const h5::Handle memory{H5Screate_simple(1, &one, nullptr)};
  ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_UINT64, memory.get(), space.get(), H5P_DEFAULT, &value),
            0);
}

TEST(Pack, DamagedIndexIsAnErrorNamingTheFileAndSample) {
  TempDir dir;
  make_image_folder(dir.path() / "images");
  pack_folder(dir.path() / "images", dir.path() / "pack", 1 << 20);
  poke_u64(dir.path() / "pack/index.h5", "/train/offset", 2, 1'000'000);
  expect_input_error(
      [&] { PackedSource(dir.path() / "pack", "train", 3); },
      {"index.h5", "sample 2 ('dog/z.jpeg')", "beyond the end of shard", "train-00000.h5"});
  // The other split is intact.
  EXPECT_EQ(PackedSource(dir.path() / "pack", "val", 3).size(), 5u);
}

TEST(Pack, MissingOrTruncatedShardIsAnErrorNamingIt) {
  TempDir dir;
  make_image_folder(dir.path() / "images");
  pack_folder(dir.path() / "images", dir.path() / "pack", 100);
  fs::resize_file(dir.path() / "pack/val-00001.h5",
                  fs::file_size(dir.path() / "pack/val-00001.h5") - 3);
  expect_input_error([&] { PackedSource(dir.path() / "pack", "val", 3); },
                     {"val-00001.h5", "truncated or replaced shard"});
  fs::remove(dir.path() / "pack/train-00002.h5");
  expect_input_error([&] { PackedSource(dir.path() / "pack", "train", 3); },
                     {"train-00002.h5", "missing shard"});
  expect_input_error([&] { PackedSource(dir.path() / "pack", "test", 3); },
                     {"index.h5", "no split 'test'", "train, val"});
}

TEST(Pack, FailedPackLeavesNothingAndExistingOutIsRefused) {
  TempDir dir;
  make_image_folder(dir.path() / "images");
  const ImageFolderSource train(dir.path() / "images", "train", 3);
  fs::remove(dir.path() / "images/train/emu/m.jpg");  // listed, then gone
  expect_input_error(
      [&] {
        write_pack(dir.path() / "pack", {{"train", &train, {}}});
      },
      {"emu/m.jpg"});
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"images"});
  fs::create_directories(dir.path() / "full");
  conflux::testing::write_plain(dir.path() / "full/x", "x");
  expect_input_error(
      [&] {
        write_pack(dir.path() / "full", {{"train", &train, {}}});
      },
      {"full", "already exists"});
}

TEST(Pack, PixelSourcesAreRefused) {
  InMemorySplit d;
  d.name = "tiny";
  d.shape = {1, 1, 1};
  d.num_classes = 1;
  d.class_names = {"a"};
  d.images = {7};
  d.labels = {0};
  const InMemorySource source(d);
  TempDir dir;
  expect_input_error(
      [&] {
        write_pack(dir.path() / "pack", {{"train", &source, {}}});
      },
      {"encoded", "pixels"});
}

// The packed source's index at ImageNet scale: 1.28 M samples in 140 shards, names like
// "n01440764/n01440764_10026.JPEG".
TEST(PackIndexMemory, ImageNetScale) {
  constexpr std::size_t kSamples = 1'281'167;
  pack::SplitIndex index;
  index.labels.resize(kSamples);
  index.shard.resize(kSamples);
  index.offset.resize(kSamples);
  index.length.resize(kSamples);
  for (std::size_t i = 0; i < kSamples; ++i) {
    index.names.push_back(
        fmt::format("n{:08}/n{:08}_{}.JPEG", 1440764 + i % 1000, 1440764 + i % 1000, i));
  }
  index.names.shrink_to_fit();
  const std::size_t bytes = index.resident_bytes();
  std::printf("[ index memory ] pack, %zu samples: %.1f MiB (%.1f bytes/sample)\n", kSamples,
              bytes / 1048576.0, static_cast<double>(bytes) / kSamples);
  EXPECT_LT(static_cast<double>(bytes) / kSamples, 60.0);
}

}  // namespace
}  // namespace conflux::data
