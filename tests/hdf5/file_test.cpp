// The typed HDF5 layer: datasets and attributes round trip with their types and shapes, and
// every failure follows the one error policy (InputError for content, RuntimeError for calls,
// both naming the file and the object).

#include "conflux/hdf5/file.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "conflux/core/error.hpp"

namespace conflux::h5 {
namespace {

namespace fs = std::filesystem;
using conflux::testing::expect_input_error;
using conflux::testing::TempDir;

class Hdf5File : public ::testing::Test {
 protected:
  // A file with one object of each kind the layer writes.
  void write_sample() {
    File file = File::create(path_, {.create_parent_groups = true});
    file.write_scalar<std::uint64_t>("/a/step", 42);
    const std::vector<double> values = {0.5, -1.25, 3.0};
    file.write("/a/values", Dims{3}, values.data());
    const std::vector<float> matrix = {1, 2, 3, 4, 5, 6};
    file.write("/b/matrix", Dims{2, 3}, matrix.data(), {.chunk = {1, 3}, .deflate = 4});
    const std::vector<std::string> names = {"first", "", "third, longest"};
    file.write_strings("/b/names", Dims{3}, names);
    const std::string note = "ünïcode ✓";
    file.write_strings("/b/note", {}, {&note, 1});
    file.write_attribute<std::int32_t>("/", "version", 7);
    file.write_string_attribute("/", "fixed", "abc", StringStorage::kFixedLength);
    file.write_string_attribute("/a", "variable", "xyz", StringStorage::kVariableLength);
    file.write_strings_attribute("/", "list", {"x", "yy"});
    file.write_strings_attribute("/", "none", {});
    file.close();
  }

  TempDir dir_;
  fs::path path_ = dir_.path() / "sample.h5";
};

TEST_F(Hdf5File, DatasetsRoundTripWithTheirTypesAndShapes) {
  write_sample();
  const File file = File::open(path_);
  EXPECT_EQ(file.read_scalar<std::uint64_t>("/a/step"), 42u);
  EXPECT_EQ(file.read_vector<double>("/a/values"), (std::vector<double>{0.5, -1.25, 3.0}));
  const Dataset matrix = file.open_dataset<float>("/b/matrix");
  EXPECT_EQ(matrix.dims(), (Dims{2, 3}));
  EXPECT_EQ(matrix.element_count(), 6u);
  EXPECT_EQ(matrix.read<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(file.read_strings("/b/names"),
            (std::vector<std::string>{"first", "", "third, longest"}));
  EXPECT_EQ(file.read_string("/b/note"), "ünïcode ✓");
  EXPECT_TRUE(file.exists("/a/values"));
  EXPECT_FALSE(file.exists("/a/nothing"));
  EXPECT_FALSE(file.exists("/missing/group/below"));
  EXPECT_FALSE(file.exists("/a/step/below"));  // a dataset has no children
  EXPECT_EQ(file.link_count("/b"), 3u);
}

TEST_F(Hdf5File, AttributesRoundTrip) {
  write_sample();
  const File file = File::open(path_);
  EXPECT_EQ(file.read_attribute<std::int32_t>("/", "version"), 7);
  EXPECT_EQ(file.read_attribute<std::int64_t>("/", "version"), 7);  // converted within the class
  EXPECT_EQ(file.read_string_attribute("/", "fixed"), "abc");
  EXPECT_EQ(file.read_string_attribute("/a", "variable"), "xyz");
  EXPECT_EQ(file.read_strings_attribute("/", "list"), (std::vector<std::string>{"x", "yy"}));
  EXPECT_TRUE(file.read_strings_attribute("/", "none").empty());
  EXPECT_TRUE(file.has_attribute("/", "version"));
  EXPECT_FALSE(file.has_attribute("/a", "version"));
}

TEST_F(Hdf5File, MalformedContentIsAnInputErrorNamingTheFileAndTheObject) {
  write_sample();
  const File file = File::open(path_, {.label = "sample file"});
  expect_input_error([&] { file.read_scalar<std::uint64_t>("/a/nope"); },
                     {"sample file: missing dataset /a/nope"});
  expect_input_error([&] { file.read_scalar<std::uint64_t>("/x/y/z"); },
                     {"sample file: missing dataset /x/y/z"});
  expect_input_error([&] { file.read_scalar<std::uint32_t>("/a/step"); },
                     {"sample file: dataset /a/step is not of type uint32"});
  expect_input_error([&] { file.read_vector<std::uint64_t>("/a/step"); },
                     {"sample file: dataset /a/step has rank 0, expected 1"});
  expect_input_error([&] { file.read_string("/a/values"); },
                     {"dataset /a/values is not of type string"});
  expect_input_error([&] { file.require_group("/a/values"); }, {"/a/values is not a group"});
  expect_input_error([&] { file.require_group("/c"); }, {"sample file: missing group /c"});
  expect_input_error([&] { file.read_attribute<std::int32_t>("/", "absent"); },
                     {"sample file: missing attribute 'absent' on the root group"});
  expect_input_error([&] { file.read_attribute<double>("/", "version"); },
                     {"attribute 'version' on the root group is not a single float"});
  expect_input_error([&] { file.read_string_attribute("/", "version"); },
                     {"attribute 'version' on the root group is not a string attribute"});
  expect_input_error([&] { file.read_string_attribute("/", "list"); },
                     {"attribute 'list' on the root group is not a single string"});
  // With `convert`, any float type reads as float.
  const Dataset values = file.open_dataset<float>("/a/values", {.convert = true});
  EXPECT_EQ(values.read<float>(), (std::vector<float>{0.5f, -1.25f, 3.0f}));
}

TEST_F(Hdf5File, FilesThatCannotBeHdf5AreInputErrors) {
  expect_input_error([&] { File::open(dir_.path() / "none.h5"); }, {"none.h5: no such file"});
  expect_input_error([&] { File::open(dir_.path()); }, {"not a regular file"});
  std::ofstream(path_) << "text, not HDF5";
  expect_input_error([&] { File::open(path_, {.label = "thing"}); },
                     {"thing: truncated or not an HDF5 file"});
}

// A plainly stored dataset whose shape needs more bytes than the file has is refused before
// anything is allocated (what a damaged header looks like).
TEST_F(Hdf5File, ShapesLargerThanTheFileAreRefused) {
  {
    File file = File::create(path_);
    file.close();
    const Handle raw(H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open");
    const hsize_t n = hsize_t{1} << 40;
    const Handle space(H5Screate_simple(1, &n, nullptr), "space");
    const Handle dataset(H5Dcreate2(raw.get(), "huge", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT),
                         "create");  // never written: no storage
  }
  const File file = File::open(path_);
  expect_input_error([&] { file.open_dataset<float>("/huge"); },
                     {"dataset /huge has shape [1099511627776], larger than the file"});
}

TEST_F(Hdf5File, FailedCallsAreRuntimeErrorsWithTheCause) {
  File file = File::create(path_);
  file.write_scalar<double>("/x", 1.0);
  try {
    file.write_scalar<double>("/x", 2.0);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path_.string() + ": /x: H5Dcreate2 failed: ", 0), 0u) << message;
  }
  // A created file destroyed without close() is discarded without trouble.
}

// A write that fails for want of space reports the system's reason; the file is then
// discarded, and HDF5 stays usable.
TEST_F(Hdf5File, FullDiskIsARuntimeErrorNamingTheCause) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const fs::path full = dir_.path() / "full.h5";
  fs::create_symlink("/dev/full", full);
  std::string message;
  try {
    File file = File::create(full);
    const std::vector<float> values(1 << 20, 0.5f);
    file.write("/values", Dims{values.size()}, values.data());
    file.close();
  } catch (const RuntimeError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  write_sample();
  EXPECT_EQ(File::open(path_).read_scalar<std::uint64_t>("/a/step"), 42u);
}

}  // namespace
}  // namespace conflux::h5
