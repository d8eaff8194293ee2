#include "conflux/data/io/open_source.hpp"

#include <gtest/gtest.h>

#include "../../support/image_folder.hpp"
#include "../../support/temp_dir.hpp"
#include "conflux/data/io/image_folder_source.hpp"
#include "conflux/data/io/limited_source.hpp"
#include "conflux/data/io/pack_writer.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;
using conflux::testing::expect_input_error;
using conflux::testing::make_image_folder;
using conflux::testing::TempDir;

DataSection section(const std::string& dataset, const fs::path& path) {
  DataSection d;
  d.dataset = dataset;
  d.path = path;
  return d;
}

TEST(LimitedSource, ExposesTheFirstSamples) {
  TempDir dir;
  make_image_folder(dir.path());
  auto inner = std::make_unique<ImageFolderSource>(dir.path(), "train", 3);
  const ImageFolderSource& folder = *inner;
  std::vector<std::uint8_t> a, b;
  folder.read(1, a);
  const std::string where1 = folder.where(1);
  const LimitedSource limited(std::move(inner), 2);
  EXPECT_EQ(limited.size(), 2u);
  EXPECT_EQ(limited.info().class_names.size(), 3u);
  limited.read(1, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(limited.where(1), where1);
  EXPECT_EQ(limited.label(1), 0);
  EXPECT_THROW(limited.read(2, b), RuntimeError);
  EXPECT_THROW(limited.label(4), RuntimeError);
}

TEST(LimitedSource, LimitZeroOrLargeKeepsTheSource) {
  TempDir dir;
  make_image_folder(dir.path());
  auto source = std::make_unique<ImageFolderSource>(dir.path(), "train", 3);
  const SampleSource* raw = source.get();
  auto kept = limit_source(std::move(source), 0);
  EXPECT_EQ(kept.get(), raw);
  kept = limit_source(std::move(kept), 5);
  EXPECT_EQ(kept.get(), raw);
  kept = limit_source(std::move(kept), 3);
  EXPECT_NE(kept.get(), raw);
  EXPECT_EQ(kept->size(), 3u);
}

TEST(OpenSources, ImageFolderWithLimits) {
  TempDir dir;
  make_image_folder(dir.path());
  DataSection d = section("image-folder", dir.path());
  d.channels = 1;
  d.train_limit = 4;
  const SourceSplits splits = open_sources(d);
  EXPECT_EQ(splits.train->size(), 4u);
  EXPECT_EQ(splits.test->size(), 5u);
  EXPECT_EQ(splits.train->info().shape.channels, 1);
  EXPECT_EQ(splits.test->where(0), (dir.path() / "val/cat/a.PNG").string());
}

TEST(OpenSources, PackedReadsThePack) {
  TempDir dir;
  make_image_folder(dir.path() / "images");
  const ImageFolderSource train(dir.path() / "images", "train", 3);
  const ImageFolderSource val(dir.path() / "images", "val", 3);
  write_pack(dir.path() / "pack", {{"train", &train, {}}, {"val", &val, {}}});
  const SourceSplits splits = open_sources(section("packed", dir.path() / "pack"));
  EXPECT_EQ(splits.train->info().name, "packed");
  EXPECT_EQ(splits.test->size(), 5u);
}

TEST(OpenSources, TestSplitWithOtherClassesNamesTheDifference) {
  TempDir dir;
  make_image_folder(dir.path());
  fs::rename(dir.path() / "val/dog", dir.path() / "val/dingo");
  expect_input_error(
      [&] { open_sources(section("image-folder", dir.path())); },
      {"data.test_split", "only in the train split: [dog]", "only in the test split: [dingo]"});
}

TEST(OpenSources, MissingPathNamesTheKey) {
  expect_input_error([] { open_sources(section("image-folder", "")); },
                     {"data.path", "image-folder"});
  expect_input_error([] { open_sources(section("hdf5-arrays", "")); }, {"data.path", "HDF5"});
  expect_input_error([] { open_sources(section("packed", "/nonexistent/pack")); },
                     {"/nonexistent/pack"});
  expect_input_error([] { open_sources(section("imagenet", "")); }, {"imagenet", "unknown"});
}

TEST(OpenSources, MissingTestSplitNamesIt) {
  TempDir dir;
  make_image_folder(dir.path(), {"train"});
  expect_input_error([&] { open_sources(section("image-folder", dir.path())); },
                     {"no split folder 'val'", "train"});
}

}  // namespace
}  // namespace conflux::data
