#include "conflux/plan/s3_transfer.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace conflux::plan {
namespace {

using testing::expect_input_error;
using testing::TempDir;

// The tables shipped in share/conflux, found relative to the test executable as conflux
// finds them.
std::filesystem::path table_dir() {
  return S3TransferTable::installed_dir();
}

// The raw cells of one of the CSV files, read independently of the code under test.
std::vector<std::vector<double>> cells(const std::string& name) {
  std::ifstream in(table_dir() / name);
  std::vector<std::vector<double>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<double> row;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  return rows;
}

TEST(S3Transfer, LoadsTheTableAndDropsThePlaceholderCells) {
  const S3TransferTable t = S3TransferTable::load(table_dir());
  ASSERT_EQ(t.rows().size(), 36u);
  EXPECT_EQ(t.rows()[0].object_mb, 1);
  EXPECT_EQ(t.rows()[0].memory_mb.size(), 14u);
  EXPECT_EQ(t.rows()[19].object_mb, 20);
  EXPECT_EQ(t.rows()[19].memory_mb.size(), 14u);
  // From 22 MB on the first three columns are duplicates of 512/640/768 MB: 11 cells remain.
  EXPECT_EQ(t.rows()[20].object_mb, 22);
  ASSERT_EQ(t.rows()[20].memory_mb.size(), 11u);
  EXPECT_EQ(t.rows()[20].memory_mb.front(), 512);
  EXPECT_EQ(t.rows()[35].object_mb, 100);
  EXPECT_EQ(t.memory_knots(), (std::vector<double>{128, 256, 384, 512, 640, 768, 896, 1024, 1280,
                                                   1536, 1792, 2048, 2560, 3008}));
}

TEST(S3Transfer, ReproducesEveryMeasuredCellExactly) {
  const S3TransferTable t = S3TransferTable::load(table_dir());
  const auto f = cells("f.csv"), m = cells("m.csv"), up = cells("bw_up.csv"),
             down = cells("bw_down.csv");
  int checked = 0;
  for (std::size_t r = 0; r < f.size(); ++r) {
    for (std::size_t c = f[r][0] >= 22 ? 3 : 0; c < f[r].size(); ++c) {
      EXPECT_EQ(t.upload_seconds(m[r][c], f[r][c]), up[r][c]) << r << "," << c;
      EXPECT_EQ(t.download_seconds(m[r][c], f[r][c]), down[r][c]) << r << "," << c;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20 * 14 + 16 * 11);
  // Spot values from the files.
  EXPECT_EQ(t.upload_seconds(128, 1), 0.18);
  EXPECT_EQ(t.upload_seconds(512, 22), 0.43);  // not the placeholder 1.37 labelled 512
  EXPECT_EQ(t.download_seconds(3008, 100), 0.769231);
}

TEST(S3Transfer, InterpolatesLinearlyInMemoryThenInSize) {
  const S3TransferTable t = S3TransferTable::load(table_dir());
  // Memory midpoint of row 1 MB: 128 -> 0.18, 256 -> 0.12.
  EXPECT_DOUBLE_EQ(t.upload_seconds(192, 1), 0.15);
  // Size midpoint at 128 MB: 1 MB -> 0.18, 2 MB -> 0.23.
  EXPECT_DOUBLE_EQ(t.upload_seconds(128, 1.5), 0.205);
  // Both: the mean of the four corners.
  EXPECT_DOUBLE_EQ(t.upload_seconds(192, 1.5), (0.18 + 0.12 + 0.23 + 0.14) / 4);
  // A quarter of the way in memory between 2560 and 3008 MB at 100 MB.
  EXPECT_DOUBLE_EQ(t.download_seconds(2672, 100), 0.75 * 0.793651 + 0.25 * 0.769231);
  // Between rows with different valid knots (20 MB: from 128 MB, 22 MB: from 512 MB), each row
  // is interpolated over its own knots: 22 MB below 512 MB holds its 512 MB value.
  EXPECT_DOUBLE_EQ(t.upload_seconds(128, 21), 0.5 * 1.37 + 0.5 * 0.43);
  EXPECT_DOUBLE_EQ(t.upload_seconds(300, 22), 0.43);
}

TEST(S3Transfer, ClampsMemoryAndSmallObjectsAndExtrapolatesLargeObjects) {
  const S3TransferTable t = S3TransferTable::load(table_dir());
  for (const double size : {1.0, 5.5, 37.0, 100.0}) {
    EXPECT_EQ(t.upload_seconds(64, size), t.upload_seconds(128, size));
    EXPECT_EQ(t.upload_seconds(10240, size), t.upload_seconds(3008, size));
    EXPECT_EQ(t.download_seconds(4000, size), t.download_seconds(3008, size));
  }
  for (const double memory : {128.0, 700.0, 3008.0}) {
    EXPECT_EQ(t.upload_seconds(memory, 0.25), t.upload_seconds(memory, 1));
    EXPECT_EQ(t.download_seconds(memory, 0.01), t.download_seconds(memory, 1));
  }
  // Above 100 MB: the 50 -> 100 MB segment continued (3008 MB: 0.62 s, 1.05263 s).
  EXPECT_NEAR(t.upload_seconds(3008, 150), 1.05263 + (1.05263 - 0.62), 1e-12);
  EXPECT_NEAR(t.upload_seconds(3008, 200), 1.05263 + 2 * (1.05263 - 0.62), 1e-12);
}

TEST(S3Transfer, IsPiecewiseLinearInMemoryBetweenTheKnots) {
  const S3TransferTable t = S3TransferTable::load(table_dir());
  const std::vector<double>& k = t.memory_knots();
  for (const double size : {0.5, 1.0, 3.7, 20.5, 21.0, 33.3, 75.0, 180.0}) {
    for (std::size_t j = 0; j + 1 < k.size(); ++j) {
      const double u0 = t.upload_seconds(k[j], size), u1 = t.upload_seconds(k[j + 1], size);
      const double d0 = t.download_seconds(k[j], size), d1 = t.download_seconds(k[j + 1], size);
      for (const double w : {0.1, 0.5, 0.77}) {
        const double x = (1 - w) * k[j] + w * k[j + 1];
        EXPECT_NEAR(t.upload_seconds(x, size), (1 - w) * u0 + w * u1, 1e-12) << size << " " << x;
        EXPECT_NEAR(t.download_seconds(x, size), (1 - w) * d0 + w * d1, 1e-12) << size << " " << x;
      }
    }
  }
}

// A copy of the real table in a temp dir with one file replaced.
class S3TransferBadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"f.csv", "m.csv", "bw_up.csv", "bw_down.csv"}) {
      std::filesystem::copy_file(table_dir() / name, dir_.path() / name);
    }
  }
  // Replaces line `line` (1-based) of `name` with `text` (or appends/truncates when empty).
  void edit(const std::string& name, std::size_t line, const std::string& text) {
    std::ifstream in(dir_.path() / name);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    in.close();
    if (text.empty()) {
      lines.resize(line - 1);
    } else {
      lines[line - 1] = text;
    }
    std::ofstream out(dir_.path() / name);
    for (const auto& l : lines) out << l << "\n";
  }
  TempDir dir_;
};

TEST_F(S3TransferBadFiles, MissingFile) {
  std::filesystem::remove(dir_.path() / "bw_down.csv");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); }, {"bw_down.csv", "cannot open"});
}

TEST_F(S3TransferBadFiles, RaggedRow) {
  edit("bw_up.csv", 3, "0.29,0.18,0.15");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); },
                     {"bw_up.csv:3", "3 columns", "14"});
}

TEST_F(S3TransferBadFiles, NotANumber) {
  edit("m.csv", 2, "128,256,abc,512,640,768,896,1024,1280,1536,1792,2048,2560,3008");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); }, {"m.csv:2", "column 3", "'abc'"});
}

TEST_F(S3TransferBadFiles, FewerRowsThanTheOthers) {
  edit("bw_down.csv", 36, "");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); },
                     {"bw_down.csv", "35 rows x 14 columns", "36 x 14"});
}

TEST_F(S3TransferBadFiles, MixedObjectSizesInARow) {
  edit("f.csv", 4, "4,4,4,4,4,5,4,4,4,4,4,4,4,4");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); },
                     {"f.csv:4", "column 6", "one object size"});
}

TEST_F(S3TransferBadFiles, MemoryOutOfOrder) {
  edit("m.csv", 1, "128,384,256,512,640,768,896,1024,1280,1536,1792,2048,2560,3008");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); }, {"m.csv:1", "must ascend"});
}

TEST_F(S3TransferBadFiles, NegativeTime) {
  edit("bw_up.csv", 1, "-0.18,0.12,0.12,0.11,0.11,0.1,0.11,0.12,0.13,0.14,0.11,0.1,0.13,0.12");
  expect_input_error([&] { S3TransferTable::load(dir_.path()); },
                     {"bw_up.csv:1", "column 1", ">= 0"});
}

TEST(S3Transfer, RejectsBadRows) {
  expect_input_error([] { S3TransferTable::from_rows({}); }, {"at least 2"});
  S3TransferTable::Row a{.object_mb = 2, .memory_mb = {128}, .upload_s = {1}, .download_s = {1}};
  S3TransferTable::Row b{.object_mb = 1, .memory_mb = {128}, .upload_s = {1}, .download_s = {1}};
  expect_input_error([&] { S3TransferTable::from_rows({a, b}); }, {"row 2", "ascend"});
}

}  // namespace
}  // namespace conflux::plan
