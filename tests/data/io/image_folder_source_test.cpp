#include "conflux/data/io/image_folder_source.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "../../support/image_folder.hpp"
#include "../../support/temp_dir.hpp"
#include "conflux/data/io/name_table.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;
using conflux::testing::expect_input_error;
using conflux::testing::image_bytes;
using conflux::testing::make_image_folder;
using conflux::testing::TempDir;

TEST(ImageFolderSource, ListsClassesAndFilesInBytewiseOrder) {
  TempDir dir;
  make_image_folder(dir.path());
  const ImageFolderSource source(dir.path(), "train", 3);
  const SourceInfo& info = source.info();
  EXPECT_EQ(info.format, SampleFormat::kEncoded);
  EXPECT_EQ(info.shape, (ImageShape{3, 0, 0}));
  EXPECT_EQ(info.class_names, (std::vector<std::string>{"cat", "dog", "emu"}));
  EXPECT_EQ(info.num_classes, 3);
  ASSERT_EQ(source.size(), 5u);
  // "a.PNG" < "b.jpg" bytewise; notes.txt is not a sample.
  const std::vector<std::string> names = {"cat/a.PNG", "cat/b.jpg", "dog/z.jpeg", "emu/l.jpg",
                                          "emu/m.jpg"};
  const std::vector<model::Label> labels = {0, 0, 1, 2, 2};
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(source.relative_name(i), names[i]);
    EXPECT_EQ(source.label(i), labels[i]);
    EXPECT_EQ(source.where(i), (dir.path() / "train" / names[i]).string());
    source.read(i, bytes);
    const auto slash = names[i].find('/');
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()),
              image_bytes("train", names[i].substr(0, slash), names[i].substr(slash + 1)));
  }
  EXPECT_EQ(source.ignored_files(), 1u);
  EXPECT_GT(source.resident_bytes(), 0u);
}

TEST(ImageFolderSource, ConcurrentReadsGiveTheFilesBytes) {
  TempDir dir;
  make_image_folder(dir.path());
  const ImageFolderSource source(dir.path(), "val", 1);
  std::vector<std::vector<std::uint8_t>> expected(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) source.read(i, expected[i]);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::uint8_t> bytes;
      for (int round = 0; round < 50; ++round) {
        for (std::size_t i = 0; i < source.size(); ++i) {
          source.read(i, bytes);
          if (bytes != expected[i]) ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ImageFolderSource, IdentityIsTheListingAndChangesWithAFileSize) {
  TempDir dir;
  make_image_folder(dir.path());
  const auto first = ImageFolderSource(dir.path(), "train", 3).info().sources;
  const auto again = ImageFolderSource(dir.path(), "train", 3).info().sources;
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].name, "train listing (5 files)");
  EXPECT_EQ(first[0].sha256.size(), 64u);
  EXPECT_EQ(first, again);
  // Same size, other bytes: the listing digest does not read contents (by design).
  conflux::testing::write_plain(dir.path() / "train/dog/z.jpeg",
                                std::string(image_bytes("train", "dog", "z.jpeg").size(), 'q'));
  EXPECT_EQ(ImageFolderSource(dir.path(), "train", 3).info().sources, first);
  conflux::testing::write_plain(dir.path() / "train/dog/z.jpeg", "longer or shorter");
  EXPECT_NE(ImageFolderSource(dir.path(), "train", 3).info().sources, first);
}

TEST(ImageFolderSource, MissingSplitListsTheSplitsThatExist) {
  TempDir dir;
  make_image_folder(dir.path(), {"train", "validation"});
  expect_input_error([&] { ImageFolderSource(dir.path(), "val", 3); },
                     {(dir.path()).string(), "no split folder 'val'", "train, validation"});
  expect_input_error([&] { ImageFolderSource(dir.path() / "nowhere", "train", 3); },
                     {"nowhere", "no such directory"});
}

TEST(ImageFolderSource, EmptyClassFolderIsAnErrorNamingIt) {
  TempDir dir;
  make_image_folder(dir.path());
  fs::create_directories(dir.path() / "train/dingo");
  conflux::testing::write_plain(dir.path() / "train/dingo/readme.txt", "no images here");
  expect_input_error([&] { ImageFolderSource(dir.path(), "train", 3); },
                     {(dir.path() / "train/dingo").string(), "class folder without images"});
}

TEST(ImageFolderSource, FolderWithoutImagesOrClassesIsAnError) {
  TempDir dir;
  fs::create_directories(dir.path() / "train/cat");
  fs::create_directories(dir.path() / "train/dog");
  conflux::testing::write_plain(dir.path() / "train/cat/a.gif", "GIF89a");
  expect_input_error([&] { ImageFolderSource(dir.path(), "train", 3); },
                     {(dir.path() / "train").string(), "no images", "2 class folders"});
  // Flat images (as ImageNet's val set ships): no class folders.
  fs::create_directories(dir.path() / "val");
  conflux::testing::write_plain(dir.path() / "val/x.JPEG", "bytes");
  expect_input_error([&] { ImageFolderSource(dir.path(), "val", 3); },
                     {"no class folders", "1 images directly"});
}

TEST(ImageFolderSource, ReadOfAVanishedFileNamesIt) {
  TempDir dir;
  make_image_folder(dir.path());
  const ImageFolderSource source(dir.path(), "train", 3);
  fs::remove(dir.path() / "train/dog/z.jpeg");
  std::vector<std::uint8_t> bytes;
  expect_input_error([&] { source.read(2, bytes); }, {"train/dog/z.jpeg"});
}

TEST(ImageFileName, ExtensionsInAnyCase) {
  EXPECT_TRUE(is_image_file_name("a.jpg"));
  EXPECT_TRUE(is_image_file_name("a.JPEG"));
  EXPECT_TRUE(is_image_file_name("x.y.Png"));
  EXPECT_FALSE(is_image_file_name("a.gif"));
  EXPECT_FALSE(is_image_file_name("jpg"));
  EXPECT_FALSE(is_image_file_name(".png"));
  EXPECT_FALSE(is_image_file_name("a.jpg.txt"));
}

// The index of an ImageNet-sized folder: 1.28 M names like "n01440764_10026.JPEG" in 1000
// classes. The folder source keeps exactly a NameTable of the file names and the class starts.
TEST(ImageFolderIndexMemory, ImageNetScale) {
  constexpr std::size_t kSamples = 1'281'167, kClasses = 1000;
  NameTable names;
  std::vector<std::size_t> class_begin;
  for (std::size_t i = 0; i < kSamples; ++i) {
    if (i % (kSamples / kClasses + 1) == 0) class_begin.push_back(i);
    names.push_back(fmt::format("n{:08}_{}.JPEG", 1440764 + i % kClasses, i));
  }
  names.shrink_to_fit();
  const std::size_t bytes = names.resident_bytes() + class_begin.size() * sizeof(std::size_t);
  const double per_sample = static_cast<double>(bytes) / kSamples;
  std::printf("[ index memory ] image folder, %zu samples: %.1f MiB (%.1f bytes/sample)\n",
              kSamples, bytes / 1048576.0, per_sample);
  EXPECT_EQ(names[kSamples - 1],
            fmt::format("n{:08}_{}.JPEG", 1440764 + (kSamples - 1) % kClasses, kSamples - 1));
  // A name of ~22 bytes costs it and 4 more: no std::string per file.
  EXPECT_LT(per_sample, 30.0);
}

}  // namespace
}  // namespace conflux::data
