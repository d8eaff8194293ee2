#include "conflux/data/io/hdf5_array_source.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;
using conflux::testing::expect_input_error;
using conflux::testing::TempDir;

constexpr hsize_t kN = 5, kC = 3, kH = 2, kW = 4;

// The pixel of sample n, channel c, row y, column x.
std::uint8_t pixel(hsize_t n, hsize_t c, hsize_t y, hsize_t x) {
  return static_cast<std::uint8_t>(n * 50 + c * 17 + y * 5 + x);
}

// Writes images (hwc or chw, uint8) and int64 labels to `path`, chunked two samples a chunk.
template <typename Label = std::int64_t>
void write_arrays(const fs::path& path, bool chw, std::vector<Label> labels,
                  const std::string& images = "/train/images",
                  const std::string& labels_path = "/train/labels") {
  std::vector<std::uint8_t> data;
  for (hsize_t n = 0; n < kN; ++n) {
    for (hsize_t a = 0; a < (chw ? kC : kH); ++a) {
      for (hsize_t b = 0; b < (chw ? kH : kW); ++b) {
        for (hsize_t d = 0; d < (chw ? kW : kC); ++d) {
          data.push_back(chw ? pixel(n, a, b, d) : pixel(n, d, a, b));
        }
      }
    }
  }
  auto file = h5::File::create(path, {.create_parent_groups = true});
  const h5::Dims dims = chw ? h5::Dims{kN, kC, kH, kW} : h5::Dims{kN, kH, kW, kC};
  h5::Dims chunk = dims;
  chunk[0] = 2;
  file.write(images, dims, data.data(), {.chunk = chunk, .deflate = 1});
  const hsize_t n[1] = {labels.size()};
  file.write(labels_path, n, labels.data());
  file.close();
}

void expect_chw_pixels(const Hdf5ArraySource& source) {
  std::vector<std::uint8_t> out;
  for (hsize_t n = 0; n < kN; ++n) {
    source.read(n, out);
    ASSERT_EQ(out.size(), kC * kH * kW);
    for (hsize_t c = 0; c < kC; ++c) {
      for (hsize_t y = 0; y < kH; ++y) {
        for (hsize_t x = 0; x < kW; ++x) {
          EXPECT_EQ(out[(c * kH + y) * kW + x], pixel(n, c, y, x)) << n << c << y << x;
        }
      }
    }
  }
}

TEST(Hdf5ArraySource, HwcAndChwReadAsChw) {
  TempDir dir;
  for (const bool chw : {false, true}) {
    const fs::path path = dir.path() / (chw ? "chw.h5" : "hwc.h5");
    write_arrays(path, chw, {0, 4, 1, 1, 2});
    const Hdf5ArraySource source({path, "/train/images", "/train/labels", chw, 0});
    EXPECT_EQ(source.info().format, SampleFormat::kPixels);
    EXPECT_EQ(source.info().shape, (ImageShape{3, 2, 4}));
    EXPECT_EQ(source.info().num_classes, 5);  // largest label + 1
    EXPECT_EQ(source.info().class_names.size(), 5u);
    ASSERT_EQ(source.size(), kN);
    EXPECT_EQ(source.label(1), 4);
    EXPECT_EQ(source.where(3), path.string() + " /train/images[3]");
    expect_chw_pixels(source);
    ASSERT_EQ(source.info().sources.size(), 1u);
  }
}

TEST(Hdf5ArraySource, ConcurrentReadsAreConsistent) {
  TempDir dir;
  write_arrays(dir.path() / "a.h5", false, {0, 1, 2, 3, 4});
  const Hdf5ArraySource source({dir.path() / "a.h5", "/train/images", "/train/labels", false, 0});
  std::vector<std::vector<std::uint8_t>> expected(kN);
  for (hsize_t n = 0; n < kN; ++n) source.read(n, expected[n]);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::uint8_t> out;
      for (int round = 0; round < 100; ++round) {
        for (hsize_t n = 0; n < kN; ++n) {
          source.read(n, out);
          if (out != expected[n]) ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Hdf5ArraySource, Float32BecomesRoundedClampedBytes) {
  TempDir dir;
  const fs::path path = dir.path() / "f.h5";
  {
    // One 1x1x1x... : 1 sample of 1x2x3 (H, W, C), hwc.
    const std::vector<float> values = {0.0f, 1.0f, 0.5f, -0.2f, 1.7f, NAN};
    const std::vector<std::int32_t> labels = {2};
    auto file = h5::File::create(path, {.create_parent_groups = true});
    const hsize_t dims[4] = {1, 1, 2, 3}, n[1] = {1};
    file.write("/train/images", dims, values.data());
    file.write("/train/labels", n, labels.data());
    file.close();
  }
  const Hdf5ArraySource source({path, "/train/images", "/train/labels", false, 3});
  std::vector<std::uint8_t> out;
  source.read(0, out);
  // CHW of pixels (0, 1, 0.5) and (-0.2, 1.7, NaN): channel 0 = {0, 0}, 1 = {255, 255},
  // 2 = {128, 0}.
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0, 0, 255, 255, 128, 0}));
  EXPECT_EQ(source.info().num_classes, 3);
}

TEST(Hdf5ArraySource, LabelsOutOfRangeNameFileDatasetAndIndex) {
  TempDir dir;
  const fs::path path = dir.path() / "a.h5";
  write_arrays(path, false, {0, 1, 9, 1, 0});
  expect_input_error(
      [&] {
        Hdf5ArraySource({path, "/train/images", "/train/labels", false, 5});
      },
      {path.string(), "/train/labels[2] = 9", "[0, 5)", "data.num_classes"});
  write_arrays(path, false, {0, 1, -1, 1, 0});
  expect_input_error(
      [&] {
        Hdf5ArraySource({path, "/train/images", "/train/labels", false, 0});
      },
      {"/train/labels[2] = -1"});
  // Labels stored as uint8 are read through conversion.
  write_arrays<std::uint8_t>(path, false, {0, 1, 2, 1, 0});
  EXPECT_EQ(Hdf5ArraySource({path, "/train/images", "/train/labels", false, 0}).info().num_classes,
            3);
}

TEST(Hdf5ArraySource, BadShapesAndCountsAreErrors) {
  TempDir dir;
  const fs::path path = dir.path() / "a.h5";
  write_arrays(path, false, {0, 1, 2, 1});  // 4 labels for 5 images
  expect_input_error(
      [&] {
        Hdf5ArraySource({path, "/train/images", "/train/labels", false, 0});
      },
      {"4 labels", "5 images"});
  write_arrays(path, false, {0, 1, 2, 1, 0});
  // Read as chw, [5, 2, 4, 3] has 2 channels.
  expect_input_error(
      [&] {
        Hdf5ArraySource({path, "/train/images", "/train/labels", true, 0});
      },
      {"2 channels", "chw"});
  expect_input_error(
      [&] {
        Hdf5ArraySource({path, "/nope", "/train/labels", false, 0});
      },
      {"missing dataset /nope"});
}

}  // namespace
}  // namespace conflux::data
