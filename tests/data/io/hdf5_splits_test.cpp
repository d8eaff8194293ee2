#include "conflux/data/io/hdf5_splits.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "../../support/temp_dir.hpp"
#include "conflux/core/error.hpp"
#include "conflux/hdf5/file.hpp"
#include "conflux/hdf5/handle.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;

using conflux::testing::TempDir;

using conflux::testing::expect_input_error;

InMemorySplit make_split(std::size_t n, int seed, std::vector<SourceFile> sources) {
  InMemorySplit ds;
  ds.name = "tiny";
  ds.shape = {3, 4, 5};
  ds.num_classes = 3;
  ds.class_names = {"cat", "dog", "T-shirt/top"};
  ds.images.resize(n * ds.shape.size());
  for (std::size_t i = 0; i < ds.images.size(); ++i) {
    ds.images[i] = static_cast<std::uint8_t>((i * 31 + static_cast<std::size_t>(seed)) & 0xff);
  }
  for (std::size_t i = 0; i < n; ++i) ds.labels.push_back(static_cast<model::Label>(i % 3));
  ds.sources = std::move(sources);
  return ds;
}

InMemorySplits make_splits(std::size_t train_n = 300, std::size_t test_n = 7) {
  // 300 training images span two 256-image chunks.
  return {make_split(train_n, 1, {{"train-a.bin", std::string(64, 'a')}, {"train-b.bin", "bb"}}),
          make_split(test_n, 2, {{"test.bin", std::string(64, 'c')}})};
}

void expect_same(const InMemorySplit& a, const InMemorySplit& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(a.class_names, b.class_names);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.sources, b.sources);
}

/// Opens a written file read-write to damage it.
h5::Handle open_rw(const fs::path& path) {
  return h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open test file");
}

class Hdf5DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() / "data.h5";
    write_hdf5_splits(path_, make_splits());
  }
  TempDir dir_;
  fs::path path_;
};

TEST_F(Hdf5DatasetTest, RoundTrip) {
  const InMemorySplits original = make_splits();
  const InMemorySplits read = read_hdf5_splits(path_);
  expect_same(read.train, original.train);
  expect_same(read.test, original.test);
}

TEST_F(Hdf5DatasetTest, LeavesNoTemporaryFileAndOverwritesAtomically) {
  write_hdf5_splits(path_, make_splits(10, 0));  // replaces the file from SetUp
  std::vector<fs::path> entries(fs::directory_iterator(dir_.path()), fs::directory_iterator());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].filename(), "data.h5");
  EXPECT_EQ(read_hdf5_splits(path_).train.size(), 10u);
  EXPECT_EQ(read_hdf5_splits(path_).test.size(), 0u);
}

TEST_F(Hdf5DatasetTest, RootAttributesFollowTheDocumentedLayout) {
  h5::silence_error_stack();
  h5::Handle file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  for (const char* name : {"name", "channels", "height", "width", "num_classes", "class_names",
                           "source_files", "source_sha256", "format_version"}) {
    EXPECT_GT(H5Aexists(file.get(), name), 0) << name;
  }
  h5::Handle attr(H5Aopen(file.get(), "format_version", H5P_DEFAULT), "open attribute");
  std::int32_t version = 0;
  ASSERT_GE(H5Aread(attr.get(), H5T_NATIVE_INT32, &version), 0);
  EXPECT_EQ(version, 1);
  h5::Handle images(H5Dopen2(file.get(), "/train/images", H5P_DEFAULT), "open images");
  h5::Handle dcpl(H5Dget_create_plist(images.get()), "get plist");
  EXPECT_EQ(H5Pget_layout(dcpl.get()), H5D_CHUNKED);
  hsize_t chunk[4] = {};
  ASSERT_EQ(H5Pget_chunk(dcpl.get(), 4, chunk), 4);
  EXPECT_EQ(chunk[0], 256u);
  EXPECT_EQ(chunk[1], 3u);
  EXPECT_GT(H5Pget_nfilters(dcpl.get()), 0);
}

TEST_F(Hdf5DatasetTest, NotAnHdf5File) {
  const auto text = dir_.path() / "notes.txt";
  std::ofstream(text) << "this is not HDF5\n";
  expect_input_error([&] { read_hdf5_splits(text); }, {text.string(), "not an HDF5 file"});
  const auto missing = dir_.path() / "missing.h5";
  expect_input_error([&] { read_hdf5_splits(missing); }, {missing.string(), "no such file"});
}

// A checkpoint given as data.hdf5_file used to say only "format_version 2 is not supported".
TEST_F(Hdf5DatasetTest, AnotherConfluxFormatIsNamed) {
  const auto ckpt = dir_.path() / "ckpt-000000010.h5";
  {
    h5::File file = h5::File::create(ckpt);
    file.write_string_attribute("/", "format", "conflux-checkpoint",
                                h5::StringStorage::kVariableLength);
    file.write_attribute<std::int32_t>("/", "format_version", 2);
    file.close();
  }
  expect_input_error([&] { read_hdf5_splits(ckpt); },
                     {ckpt.string(), "is a conflux-checkpoint file, not a conflux HDF5 dataset"});
}

// Damage the HDF5 library trips over (here a compressed chunk of /train/images that no longer
// inflates) is bad input naming the file and the dataset (exit 2); it used to be exit 3.
TEST_F(Hdf5DatasetTest, ADamagedChunkIsBadInputNamingTheFile) {
  haddr_t address = 0;
  hsize_t size = 0;
  {
    h5::Handle file = open_rw(path_);
    const h5::Handle images(H5Dopen2(file.get(), "/train/images", H5P_DEFAULT), "open images");
    hsize_t offset[4] = {};
    unsigned mask = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(images.get(), offset, &mask, &address, &size), 0);
    ASSERT_GT(size, 16u);
  }
  {
    std::fstream bytes(path_, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(static_cast<std::streamoff>(address + size / 4));
    const std::string junk(size / 2, '\xff');
    bytes.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  try {
    read_hdf5_splits(path_);
    FAIL() << "a damaged dataset was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path_.string() + ": damaged HDF5 dataset"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("/train/images"), std::string::npos) << e.what();
  } catch (const Error& e) {
    FAIL() << "exit " << static_cast<int>(e.code()) << ": " << e.what();
  }
}

TEST_F(Hdf5DatasetTest, MissingDataset) {
  {
    h5::Handle file = open_rw(path_);
    ASSERT_GE(H5Ldelete(file.get(), "/test/labels", H5P_DEFAULT), 0);
  }
  expect_input_error([&] { read_hdf5_splits(path_); },
                     {path_.string(), "missing dataset /test/labels"});
}

TEST_F(Hdf5DatasetTest, MissingGroupAndAttribute) {
  {
    h5::Handle file = open_rw(path_);
    ASSERT_GE(H5Adelete(file.get(), "num_classes"), 0);
  }
  expect_input_error([&] { read_hdf5_splits(path_); },
                     {path_.string(), "missing attribute 'num_classes'"});
  write_hdf5_splits(path_, make_splits());
  {
    h5::Handle file = open_rw(path_);
    ASSERT_GE(H5Ldelete(file.get(), "/train", H5P_DEFAULT), 0);
  }
  expect_input_error([&] { read_hdf5_splits(path_); }, {path_.string(), "missing group /train"});
}

TEST_F(Hdf5DatasetTest, WrongRankAndLengthMismatch) {
  {
    h5::Handle file = open_rw(path_);
    ASSERT_GE(H5Ldelete(file.get(), "/train/labels", H5P_DEFAULT), 0);
    const hsize_t dims[2] = {300, 1};
    h5::Handle space(H5Screate_simple(2, dims, nullptr), "space");
    h5::Handle labels(H5Dcreate2(file.get(), "/train/labels", H5T_STD_U8LE, space.get(),
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      "create");
  }
  expect_input_error([&] { read_hdf5_splits(path_); },
                     {path_.string(), "/train/labels has rank 2, expected 1"});
  {
    h5::Handle file = open_rw(path_);
    ASSERT_GE(H5Ldelete(file.get(), "/train/labels", H5P_DEFAULT), 0);
    const hsize_t n = 299;
    h5::Handle space(H5Screate_simple(1, &n, nullptr), "space");
    h5::Handle labels(H5Dcreate2(file.get(), "/train/labels", H5T_STD_U8LE, space.get(),
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      "create");
  }
  expect_input_error([&] { read_hdf5_splits(path_); },
                     {path_.string(), "holds 300 images", "299 labels"});
}

TEST_F(Hdf5DatasetTest, LabelOutOfRange) {
  {
    h5::Handle file = open_rw(path_);
    h5::Handle labels(H5Dopen2(file.get(), "/test/labels", H5P_DEFAULT), "open");
    std::vector<std::uint8_t> values = {0, 1, 2, 200, 1, 2, 0};
    ASSERT_GE(
        H5Dwrite(labels.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  }
  expect_input_error([&] { read_hdf5_splits(path_); },
                     {path_.string(), "/test/labels[3] = 200 is out of range [0, 3)"});
}

TEST_F(Hdf5DatasetTest, ReadsFixedLengthStrings) {
  {
    h5::Handle file = open_rw(path_);
    ASSERT_GE(H5Adelete(file.get(), "name"), 0);
    h5::Handle type(H5Tcopy(H5T_C_S1), "type");
    ASSERT_GE(H5Tset_size(type.get(), 8), 0);
    h5::Handle space(H5Screate(H5S_SCALAR), "space");
    h5::Handle attr(
        H5Acreate2(file.get(), "name", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), "attr");
    const char value[8] = {'f', 'i', 'x', 'e', 'd', 0, 0, 0};
    ASSERT_GE(H5Awrite(attr.get(), type.get(), value), 0);
  }
  EXPECT_EQ(read_hdf5_splits(path_).train.name, "fixed");
}

TEST_F(Hdf5DatasetTest, FailedWriteRemovesTheTemporaryFile) {
  // The target is a directory: the temporary file is written, the rename fails.
  const auto target = dir_.path() / "target.h5";
  fs::create_directories(target / "occupied");
  EXPECT_THROW(write_hdf5_splits(target, make_splits()), RuntimeError);
  std::vector<fs::path> entries(fs::directory_iterator(dir_.path()), fs::directory_iterator());
  EXPECT_EQ(entries.size(), 2u);  // data.h5 and target.h5/, no target.h5.tmp-*
  expect_input_error([&] { write_hdf5_splits(dir_.path() / "no-dir" / "x.h5", make_splits()); },
                     {"no-dir", "does not exist"});
}

}  // namespace
}  // namespace conflux::data
