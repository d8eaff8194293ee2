// Checkpoint files: round trip, atomic writes and their failures, the description.

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>

#include "checkpoint_test_support.hpp"
#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;
using namespace conflux::ckpt::test_support;

using CheckpointFile = CheckpointTest;

TEST_F(CheckpointFile, RoundTripKeepsEveryFieldBitExact) {
  const TrainingState state = filled_state();
  const WriteStats stats = write_checkpoint(file_, state);
  ASSERT_TRUE(fs::exists(file_));
  EXPECT_EQ(stats.bytes, fs::file_size(file_));
  EXPECT_GT(stats.seconds, 0.0);
  // Only the published file remains: no temporary beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1);
  const TrainingState back = read_checkpoint(file_);
  expect_same_state(state, back);
  EXPECT_TRUE(std::isnan(back.optimizer.buffers[0].values[0]));
  EXPECT_TRUE(std::signbit(back.params[3]));
}

TEST_F(CheckpointFile, RoundTripWithoutAuditCountsAndMetrics) {
  TrainingState state = filled_state();
  state.audit_counts.clear();
  state.metrics.clear();
  state.optimizer = {.name = "sgd", .steps = 0, .buffers = {}};  // SGD before its first step
  state.config_toml.clear();
  write_checkpoint(file_, state);
  const TrainingState back = read_checkpoint(file_);
  expect_same_state(state, back);
  EXPECT_TRUE(back.audit_counts.empty());
  EXPECT_TRUE(back.metrics.empty());
  EXPECT_EQ(back.optimizer.steps, 0u);
  EXPECT_TRUE(back.optimizer.buffers.empty());
}

TEST_F(CheckpointFile, RoundTripOfAnEmptyStateAndRewriteReplaces) {
  const TrainingState empty;
  write_checkpoint(file_, empty);
  expect_same_state(empty, read_checkpoint(file_));
  // Writing over an existing checkpoint replaces it.
  const TrainingState state = filled_state();
  write_checkpoint(file_, state);
  expect_same_state(state, read_checkpoint(file_));
}

TEST_F(CheckpointFile, LayoutIsPlainHdf5WithTheDocumentedDatasets) {
  const TrainingState state = filled_state();
  write_checkpoint(file_, state);
  const h5::Handle file(H5Fopen(file_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  const h5::File checkpoint = h5::File::open(file_);
  EXPECT_EQ(checkpoint.read_string_attribute("/", "format"), "conflux-checkpoint");
  const std::string checksum = checkpoint.read_string_attribute("/", "checksum");
  EXPECT_EQ(checksum.size(), 7u + 8u);
  EXPECT_EQ(checksum.rfind("crc32c:", 0), 0u);
  int version = 0;
  const h5::Handle attr(H5Aopen(file.get(), "format_version", H5P_DEFAULT), "attr");
  ASSERT_GE(H5Aread(attr.get(), H5T_NATIVE_INT, &version), 0);
  EXPECT_EQ(version, 3);
  for (const char* name : {"/position/epoch",
                           "/position/step",
                           "/position/global_step",
                           "/position/steps_per_epoch",
                           "/position/global_batch",
                           "/position/dataset_size",
                           "/position/trainers",
                           "/position/workers",
                           "/rng/seed",
                           "/rng/scheme",
                           "/model/tensor_names",
                           "/model/layer1.weight",
                           "/optimizer/name",
                           "/optimizer/steps",
                           "/optimizer/buffer_names",
                           "/optimizer/buffers/exp_avg",
                           "/optimizer/buffers/exp_avg_sq",
                           "/optimizer/lr",
                           "/trainers/next_batch_index",
                           "/trainers/offload_ratio",
                           "/trainers/offload_credit",
                           "/accounting/epoch_loss_sum",
                           "/accounting/audit_counts",
                           "/run/config",
                           "/run/metrics",
                           "/run/created"}) {
    EXPECT_GT(H5Oexists_by_name(file.get(), name, H5P_DEFAULT), 0) << name;
  }
  // Tensors keep their shapes, are float32 and contiguous (no chunking or compression).
  const h5::Handle dset(H5Dopen2(file.get(), "/model/layer1.weight", H5P_DEFAULT), "dset");
  const h5::Handle space(H5Dget_space(dset.get()), "space");
  hsize_t dims[2] = {0, 0};
  ASSERT_EQ(H5Sget_simple_extent_ndims(space.get()), 2);
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  EXPECT_EQ(dims[0], 3u);
  EXPECT_EQ(dims[1], 4u);
  const h5::Handle type(H5Dget_type(dset.get()), "type");
  EXPECT_GT(H5Tequal(type.get(), H5T_IEEE_F32LE), 0);
  const h5::Handle dcpl(H5Dget_create_plist(dset.get()), "dcpl");
  EXPECT_EQ(H5Pget_layout(dcpl.get()), H5D_CONTIGUOUS);
  std::vector<float> values(12);
  ASSERT_GE(H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  EXPECT_TRUE(
      same_bits(values, std::vector<float>(state.params.begin(), state.params.begin() + 12)));
}

TEST_F(CheckpointFile, WriteRejectsInconsistentStates) {
  TrainingState state = filled_state();
  state.optimizer.buffers[1].values.pop_back();
  EXPECT_THROW(write_checkpoint(file_, state), RuntimeError);
  state = filled_state();
  state.optimizer.buffers[0].name = "a/b";
  EXPECT_THROW(write_checkpoint(file_, state), RuntimeError);
  state = filled_state();
  state.tensors[1].offset = 11;
  EXPECT_THROW(write_checkpoint(file_, state), RuntimeError);
  state = filled_state();
  state.tensors[0].name = "bad/name";
  EXPECT_THROW(write_checkpoint(file_, state), RuntimeError);
  EXPECT_FALSE(fs::exists(file_));
}

TEST_F(CheckpointFile, FailedCreateLeavesThePreviousCheckpoint) {
  const TrainingState old_state = filled_state();
  write_checkpoint(file_, old_state);
  // The temporary file cannot be created: a directory occupies its name.
  auto temp = file_;
  temp += ".tmp-" + std::to_string(::getpid());
  fs::create_directories(temp / "occupied");
  TrainingState next = filled_state();
  next.global_step += 1;
  try {
    write_checkpoint(file_, next);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(file_.string()), std::string::npos) << e.what();
  }
  expect_same_state(old_state, read_checkpoint(file_));
  // A destination whose directory does not exist.
  EXPECT_THROW(write_checkpoint(dir_.path() / "missing" / "ckpt.h5", next), RuntimeError);
}

// A write that fails part-way with ENOSPC (the temporary file is a link to /dev/full, whose
// writes fail with "No space left on device") leaves the previous checkpoint readable, removes
// the temporary file and leaves HDF5 in a state that shuts down cleanly at exit.
TEST_F(CheckpointFile, FullDiskLeavesThePreviousCheckpointAndNoTemp) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const TrainingState old_state = filled_state();
  write_checkpoint(file_, old_state);
  TrainingState next = filled_state();
  next.global_step += 1;
  auto temp = file_;
  temp += ".tmp-" + std::to_string(::getpid());
  fs::create_symlink("/dev/full", temp);
  std::string message;
  try {
    write_checkpoint(file_, next);
  } catch (const RuntimeError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("cannot write checkpoint " + file_.string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  expect_same_state(old_state, read_checkpoint(file_));
  EXPECT_FALSE(fs::is_symlink(temp));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1);
  // The next write succeeds.
  write_checkpoint(file_, next);
  EXPECT_EQ(read_checkpoint(file_).global_step, next.global_step);
}

// The disk fills up in the middle of the parameter data: on a 1 MiB tmpfs (mounted for the
// test; skipped where mounting is not permitted) the previous checkpoint stays readable, the
// temporary file is removed, the error names the file and the cause, and retries behave the same.
TEST_F(CheckpointFile, DiskFullMidWriteLeavesThePreviousCheckpointAndNoTemp) {
  const fs::path mnt = dir_.path() / "small-disk";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    fs::path path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const fs::path file = mnt / "ckpt.h5";
  const TrainingState old_state = filled_state();
  write_checkpoint(file, old_state);
  TrainingState big = filled_state();
  big.tensors.push_back({"zz.weight", {256, 1024}, big.params.size()});  // 1 MiB of params
  big.params.resize(big.params.size() + 256 * 1024, 0.5f);
  for (auto& b : big.optimizer.buffers) b.values.resize(big.params.size(), 0.25f);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string message;
    try {
      write_checkpoint(file, big);
    } catch (const RuntimeError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("cannot write checkpoint " + file.string()), std::string::npos)
        << message;
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
    expect_same_state(old_state, read_checkpoint(file));
    EXPECT_EQ(std::distance(fs::directory_iterator(mnt), fs::directory_iterator()), 1);
  }
}

// A write that fails after the data has gone out (a duplicate tensor name fails the second
// dataset's creation) removes its temporary file and keeps the previous checkpoint.
TEST_F(CheckpointFile, FailedLateWriteLeavesThePreviousCheckpoint) {
  const TrainingState old_state = filled_state();
  write_checkpoint(file_, old_state);
  TrainingState next = filled_state();
  next.tensors[3].name = "head.weight";
  next.tensors[3].shape = {2};
  EXPECT_THROW(write_checkpoint(file_, next), RuntimeError);
  expect_same_state(old_state, read_checkpoint(file_));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1);
}

TEST_F(CheckpointFile, DescribeListsTheKeyFacts) {
  const TrainingState state = filled_state();
  write_checkpoint(file_, state);
  const std::string text = describe_checkpoint(file_);
  for (const std::string& needle : {std::string("conflux-checkpoint version 3"),
                                    std::string("(verified)"),
                                    std::string("2024-05-06T07:08:09+0200"),
                                    std::string("13 / 20 steps per epoch"),
                                    fmt::format("{:<18} 153", "global step"),
                                    std::string("18364758544493064720"),
                                    std::string("3 trainers, 2 workers"),
                                    std::string("4 tensors, 23 parameters"),
                                    std::string("layer1.weight"),
                                    std::string("[3, 4]"),
                                    std::string("optimizer: adam"),
                                    fmt::format("{:<18} 38", "steps"),
                                    fmt::format("{:<18} [23]", "exp_avg_sq"),
                                    std::string("0.0123456789"),
                                    std::string("next batch index 41"),
                                    std::string("offload ratio 0.25"),
                                    std::string("on (5 sample counts)"),
                                    std::string("metrics: 2 lines"),
                                    std::string(R"({"epoch":1,"loss":1.7})"),
                                    std::string("    batch_size = 64")}) {
    EXPECT_NE(text.find(needle), std::string::npos) << "missing: " << needle << "\n" << text;
  }
  TrainingState quiet = state;
  quiet.audit_counts.clear();
  write_checkpoint(file_, quiet);
  EXPECT_NE(describe_checkpoint(file_).find(fmt::format("{:<18} off", "audit")), std::string::npos);

  put_file_bytes(file_, file_bytes(file_).substr(0, 100));
  EXPECT_THROW(describe_checkpoint(file_), CorruptCheckpoint);
}

}  // namespace
}  // namespace conflux::ckpt
