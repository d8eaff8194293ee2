// Reading checkpoints: every missing, truncated, damaged, foreign or inconsistent file is a
// CorruptCheckpoint naming the file and what is wrong, and never crashes the reader.

#include "conflux/ckpt/checkpoint_reader.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint_test_support.hpp"
#include "conflux/ckpt/checkpoint_writer.hpp"
#include "conflux/core/error.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;
using namespace conflux::ckpt::test_support;

using CheckpointReader = CheckpointTest;

// read_checkpoint must throw CorruptCheckpoint (exit 2) naming the file and every needle.
void expect_corrupt(const fs::path& path, std::initializer_list<std::string> needles) {
  try {
    read_checkpoint(path);
    ADD_FAILURE() << "expected CorruptCheckpoint for " << path;
  } catch (const CorruptCheckpoint& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("checkpoint " + path.string() + ": ", 0), 0u) << message;
    for (const std::string& needle : needles) {
      EXPECT_NE(message.find(needle), std::string::npos)
          << "message: " << message << "\nmissing: " << needle;
    }
  }
}

// Opens a checkpoint for editing with the HDF5 API (to build damaged-but-readable files).
h5::Handle open_for_edit(const fs::path& path) {
  return h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open for editing");
}

// Replaces the dataset at `name` by a 1-D float64/float32/uint64 array of `n` elements.
void replace_array(const fs::path& path, const char* name, hid_t type, hsize_t n) {
  const h5::Handle file = open_for_edit(path);
  ASSERT_GE(H5Ldelete(file.get(), name, H5P_DEFAULT), 0);
  const h5::Handle space(H5Screate_simple(1, &n, nullptr), "space");
  const h5::Handle dset(
      H5Dcreate2(file.get(), name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      "dataset");
  const std::vector<std::uint64_t> zeros(n, 0);  // 8 bytes each covers every type used
  ASSERT_GE(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()), 0);
}

TEST_F(CheckpointReader, MissingAndEmptyFilesAreCorrupt) {
  expect_corrupt(dir_.path() / "nope.h5", {"no such file"});
  put_file_bytes(file_, "");
  expect_corrupt(file_, {"truncated or not an HDF5 file"});
  put_file_bytes(file_, "this is a text file, not HDF5\n");
  expect_corrupt(file_, {"truncated or not an HDF5 file"});
  expect_corrupt(dir_.path(), {"not a regular file"});
}

TEST_F(CheckpointReader, TruncatedFilesAreCorrupt) {
  write_checkpoint(file_, filled_state());
  const std::string bytes = file_bytes(file_);
  const std::size_t n = bytes.size();
  const fs::path cut = dir_.path() / "cut.h5";
  for (const std::size_t length : {std::size_t{1}, std::size_t{8}, n / 10, n / 4, n / 2, 3 * n / 4,
                                   9 * n / 10, n - 100, n - 8, n - 1}) {
    SCOPED_TRACE(length);
    put_file_bytes(cut, bytes.substr(0, length));
    expect_corrupt(cut, {});
  }
}

TEST_F(CheckpointReader, FlippedParameterByteIsAChecksumMismatch) {
  TrainingState state = filled_state();
  // A run of values that occurs once in the file: the layer1.weight tensor.
  for (int i = 0; i < 12; ++i) state.params[i] = 1000.0f + 0.5f * static_cast<float>(i);
  write_checkpoint(file_, state);
  std::string bytes = file_bytes(file_);
  std::string needle(reinterpret_cast<const char*>(state.params.data()), 12 * sizeof(float));
  const std::size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos);
  bytes[at + 6 * sizeof(float) + 1] ^= 0x10;
  put_file_bytes(file_, bytes);
  expect_corrupt(file_, {"checksum mismatch: stored crc32c:", ", computed crc32c:"});
}

TEST_F(CheckpointReader, FlippedStringByteIsAChecksumMismatch) {
  TrainingState state = filled_state();
  state.config_toml = "[run]\nname = \"a-distinctive-run-name\"\n";
  write_checkpoint(file_, state);
  std::string bytes = file_bytes(file_);
  const std::size_t at = bytes.find("a-distinctive-run-name");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'b';
  put_file_bytes(file_, bytes);
  expect_corrupt(file_, {"checksum mismatch"});
}

// Any single flipped byte anywhere is either noticed or harmless: the reader never crashes,
// never returns a different state, and throws nothing but CorruptCheckpoint.
TEST_F(CheckpointReader, EveryFlippedByteIsNoticedOrHarmless) {
  const TrainingState state = filled_state();
  write_checkpoint(file_, state);
  const std::string bytes = file_bytes(file_);
  const fs::path bad = dir_.path() / "bad.h5";
  int noticed = 0;
  int checked = 0;
  for (std::size_t i = 0; i < bytes.size(); i += 17) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
    put_file_bytes(bad, flipped);
    ++checked;
    try {
      const TrainingState back = read_checkpoint(bad);
      SCOPED_TRACE(i);
      expect_same_state(state, back);
    } catch (const CorruptCheckpoint&) {
      ++noticed;
    }
  }
  EXPECT_GT(noticed, checked / 4);
}

TEST_F(CheckpointReader, WrongFormatOrVersionIsCorrupt) {
  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    ASSERT_GE(H5Adelete(file.get(), "format"), 0);
  }
  {
    h5::File file = h5::File::open(file_, {.writable = true});
    file.write_string_attribute("/", "format", "conflux-model", h5::StringStorage::kVariableLength);
    file.close();
  }
  expect_corrupt(file_, {"not a conflux checkpoint", "conflux-model"});

  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    const h5::Handle attr(H5Aopen(file.get(), "format_version", H5P_DEFAULT), "attr");
    const int two = 2;  // version 2 (SGD's velocity only) files are no longer read
    ASSERT_GE(H5Awrite(attr.get(), H5T_NATIVE_INT, &two), 0);
  }
  expect_corrupt(file_, {"format_version 2 is not supported (this conflux reads version 3)"});
}

TEST_F(CheckpointReader, OtherHdf5FilesAreNotCheckpoints) {
  {
    const h5::Handle file(H5Fcreate(file_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                          "create");
    const hsize_t n = 4;
    const h5::Handle space(H5Screate_simple(1, &n, nullptr), "space");
    const h5::Handle dset(H5Dcreate2(file.get(), "images", H5T_STD_U8LE, space.get(), H5P_DEFAULT,
                                     H5P_DEFAULT, H5P_DEFAULT),
                          "dataset");
  }
  expect_corrupt(file_, {"not a conflux checkpoint"});
}

TEST_F(CheckpointReader, EditedDatasetsAreChecksumMismatches) {
  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    const h5::Handle dset(H5Dopen2(file.get(), "/position/step", H5P_DEFAULT), "dset");
    const std::uint64_t step = 14;
    ASSERT_GE(H5Dwrite(dset.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &step), 0);
  }
  expect_corrupt(file_, {"checksum mismatch"});
}

TEST_F(CheckpointReader, InconsistentShapesAreCorrupt) {
  write_checkpoint(file_, filled_state());
  replace_array(file_, "/optimizer/buffers/exp_avg_sq", H5T_IEEE_F32LE, 22);
  expect_corrupt(file_, {"/optimizer/buffers/exp_avg_sq has 22 elements", "has 23"});

  write_checkpoint(file_, filled_state());
  replace_array(file_, "/trainers/offload_credit", H5T_IEEE_F64LE, 2);
  expect_corrupt(file_, {"/trainers arrays differ in length"});

  write_checkpoint(file_, filled_state());
  replace_array(file_, "/trainers/next_batch_index", H5T_IEEE_F64LE, 3);
  expect_corrupt(file_, {"/trainers/next_batch_index is not of type uint64"});

  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    ASSERT_GE(H5Ldelete(file.get(), "/model/head.bias", H5P_DEFAULT), 0);
  }
  expect_corrupt(file_, {"/model/head.bias is missing"});

  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    ASSERT_GE(H5Lcreate_hard(file.get(), "/model/head.bias", file.get(), "/model/extra",
                             H5P_DEFAULT, H5P_DEFAULT),
              0);
  }
  expect_corrupt(file_, {"/model holds 5 tensors but /model/tensor_names lists 4"});
}

TEST_F(CheckpointReader, OptimizerBuffersMustMatchTheirList) {
  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    ASSERT_GE(H5Ldelete(file.get(), "/optimizer/buffers/exp_avg", H5P_DEFAULT), 0);
  }
  expect_corrupt(file_, {"/optimizer/buffers/exp_avg is missing"});

  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    ASSERT_GE(H5Lcreate_hard(file.get(), "/optimizer/buffers/exp_avg", file.get(),
                             "/optimizer/buffers/momentum_buffer", H5P_DEFAULT, H5P_DEFAULT),
              0);
  }
  expect_corrupt(file_, {"/optimizer/buffers holds 3 buffers but /optimizer/buffer_names lists 2"});
}

}  // namespace
}  // namespace conflux::ckpt
