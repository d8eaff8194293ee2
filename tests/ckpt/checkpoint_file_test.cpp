// Checkpoint files: round trip, corruption detection, atomic writes, the description.

#include "conflux/ckpt/checkpoint_file.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/hdf5.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;
using conflux::testing::TempDir;

// A state with every field set to a distinctive value. Parameters: layer1.weight [3, 4],
// layer1.bias [3], head.weight [2, 3], head.bias [2] = 29 floats.
TrainingState filled_state() {
  TrainingState s;
  s.epoch = 7;
  s.step = 13;
  s.global_step = 7 * 20 + 13;
  s.steps_per_epoch = 20;
  s.global_batch = 64;
  s.dataset_size = 1250;
  s.seed = 0xfedcba9876543210ULL;
  s.trainers = 3;
  s.workers = 2;
  s.tensors = {{"layer1.weight", {3, 4}, 0},
               {"layer1.bias", {3}, 12},
               {"head.weight", {2, 3}, 15},
               {"head.bias", {2}, 21}};
  for (int i = 0; i < 23; ++i) s.params.push_back(0.1f * static_cast<float>(i) - 1.0f);
  // Values that a lossy or converting writer would not keep bit for bit.
  s.params[3] = -0.0f;
  s.params[4] = std::numeric_limits<float>::denorm_min();
  s.params[5] = std::numeric_limits<float>::infinity();
  s.params[6] = std::nextafter(1.0f, 2.0f);
  for (float p : s.params) s.velocity.push_back(p * 0.5f + 0.25f);
  s.velocity[0] = std::numeric_limits<float>::quiet_NaN();
  s.optimizer_started = true;
  s.lr = 0.0123456789;
  s.progress = {{.next_batch_index = 39, .offload = {.ratio = 0.25, .credit = -0.125}},
                {.next_batch_index = 40, .offload = {.ratio = 0.5, .credit = 0.375}},
                {.next_batch_index = 41, .offload = {.ratio = 1.0 / 3.0, .credit = 1e-300}}};
  s.epoch_loss_sum = 123.456;
  s.epoch_correct = 700;
  s.epoch_samples = 832;
  s.epoch_seconds = 4.5;
  s.elapsed_seconds = 99.25;
  s.audit_counts = {1, 0, 2, 1, 1};
  s.config_toml = "[run]\nseed = 42\nname = \"ünïcode ✓\"\n\n[train]\nbatch_size = 64\n";
  s.metrics = {R"({"epoch":0,"loss":2.1})", R"({"epoch":1,"loss":1.7})"};
  s.created = "2024-05-06T07:08:09+0200";
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void expect_same_state(const TrainingState& a, const TrainingState& b) {
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.global_step, b.global_step);
  EXPECT_EQ(a.steps_per_epoch, b.steps_per_epoch);
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.dataset_size, b.dataset_size);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.trainers, b.trainers);
  EXPECT_EQ(a.workers, b.workers);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].offset, b.tensors[i].offset);
  }
  EXPECT_TRUE(same_bits(a.params, b.params));
  EXPECT_TRUE(same_bits(a.velocity, b.velocity));
  EXPECT_EQ(a.optimizer_started, b.optimizer_started);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.lr), std::bit_cast<std::uint64_t>(b.lr));
  ASSERT_EQ(a.progress.size(), b.progress.size());
  for (std::size_t t = 0; t < a.progress.size(); ++t) {
    EXPECT_EQ(a.progress[t].next_batch_index, b.progress[t].next_batch_index);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(a.progress[t].offload.ratio),
              std::bit_cast<std::uint64_t>(b.progress[t].offload.ratio));
    EXPECT_EQ(std::bit_cast<std::uint64_t>(a.progress[t].offload.credit),
              std::bit_cast<std::uint64_t>(b.progress[t].offload.credit));
  }
  EXPECT_TRUE(same_bits(std::vector<double>{a.epoch_loss_sum, a.epoch_correct, a.epoch_samples,
                                            a.epoch_seconds, a.elapsed_seconds},
                        std::vector<double>{b.epoch_loss_sum, b.epoch_correct, b.epoch_samples,
                                            b.epoch_seconds, b.elapsed_seconds}));
  EXPECT_TRUE(same_bits(a.audit_counts, b.audit_counts));
  EXPECT_EQ(a.config_toml, b.config_toml);
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_EQ(a.created, b.created);
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put_file_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

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

class CheckpointFile : public ::testing::Test {
 protected:
  TempDir dir_;
  fs::path file_ = dir_.path() / "ckpt-000000153.h5";
};

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
  EXPECT_TRUE(std::isnan(back.velocity[0]));
  EXPECT_TRUE(std::signbit(back.params[3]));
}

TEST_F(CheckpointFile, RoundTripWithoutAuditCountsAndMetrics) {
  TrainingState state = filled_state();
  state.audit_counts.clear();
  state.metrics.clear();
  state.optimizer_started = false;
  state.config_toml.clear();
  write_checkpoint(file_, state);
  const TrainingState back = read_checkpoint(file_);
  expect_same_state(state, back);
  EXPECT_TRUE(back.audit_counts.empty());
  EXPECT_TRUE(back.metrics.empty());
  EXPECT_FALSE(back.optimizer_started);
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
  EXPECT_EQ(h5::read_string_attribute(file.get(), "format"), "conflux-checkpoint");
  const std::string checksum = h5::read_string_attribute(file.get(), "checksum");
  EXPECT_EQ(checksum.size(), 7u + 8u);
  EXPECT_EQ(checksum.rfind("crc32c:", 0), 0u);
  int version = 0;
  const h5::Handle attr(H5Aopen(file.get(), "format_version", H5P_DEFAULT), "attr");
  ASSERT_GE(H5Aread(attr.get(), H5T_NATIVE_INT, &version), 0);
  EXPECT_EQ(version, 2);
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
                           "/optimizer/velocity",
                           "/optimizer/started",
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

TEST_F(CheckpointFile, MissingAndEmptyFilesAreCorrupt) {
  expect_corrupt(dir_.path() / "nope.h5", {"no such file"});
  put_file_bytes(file_, "");
  expect_corrupt(file_, {"truncated or not an HDF5 file"});
  put_file_bytes(file_, "this is a text file, not HDF5\n");
  expect_corrupt(file_, {"truncated or not an HDF5 file"});
  expect_corrupt(dir_.path(), {"not a regular file"});
}

TEST_F(CheckpointFile, TruncatedFilesAreCorrupt) {
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

TEST_F(CheckpointFile, FlippedParameterByteIsAChecksumMismatch) {
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

TEST_F(CheckpointFile, FlippedStringByteIsAChecksumMismatch) {
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
TEST_F(CheckpointFile, EveryFlippedByteIsNoticedOrHarmless) {
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

TEST_F(CheckpointFile, WrongFormatOrVersionIsCorrupt) {
  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    ASSERT_GE(H5Adelete(file.get(), "format"), 0);
    h5::write_string_attribute(file.get(), "format", "conflux-model");
  }
  expect_corrupt(file_, {"not a conflux checkpoint", "conflux-model"});

  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    const h5::Handle attr(H5Aopen(file.get(), "format_version", H5P_DEFAULT), "attr");
    const int one = 1;  // version 1 (zlib CRC-32) files are no longer read
    ASSERT_GE(H5Awrite(attr.get(), H5T_NATIVE_INT, &one), 0);
  }
  expect_corrupt(file_, {"format_version 1 is not supported (this conflux reads version 2)"});
}

TEST_F(CheckpointFile, OtherHdf5FilesAreNotCheckpoints) {
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

TEST_F(CheckpointFile, EditedDatasetsAreChecksumMismatches) {
  write_checkpoint(file_, filled_state());
  {
    const h5::Handle file = open_for_edit(file_);
    const h5::Handle dset(H5Dopen2(file.get(), "/position/step", H5P_DEFAULT), "dset");
    const std::uint64_t step = 14;
    ASSERT_GE(H5Dwrite(dset.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &step), 0);
  }
  expect_corrupt(file_, {"checksum mismatch"});
}

TEST_F(CheckpointFile, InconsistentShapesAreCorrupt) {
  write_checkpoint(file_, filled_state());
  replace_array(file_, "/optimizer/velocity", H5T_IEEE_F32LE, 22);
  expect_corrupt(file_, {"/optimizer/velocity has 22 elements", "23 parameters"});

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

TEST_F(CheckpointFile, WriteRejectsInconsistentStates) {
  TrainingState state = filled_state();
  state.velocity.pop_back();
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
  big.velocity.resize(big.params.size(), 0.25f);
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
  for (const std::string& needle :
       {std::string("conflux-checkpoint version 2"), std::string("(verified)"),
        std::string("2024-05-06T07:08:09+0200"), std::string("13 / 20 steps per epoch"),
        fmt::format("{:<18} 153", "global step"), std::string("18364758544493064720"),
        std::string("3 trainers, 2 workers"), std::string("4 tensors, 23 parameters"),
        std::string("layer1.weight"), std::string("[3, 4]"),
        fmt::format("{:<18} yes", "momentum started"), std::string("0.0123456789"),
        std::string("next batch index 41"), std::string("offload ratio 0.25"),
        std::string("on (5 sample counts)"), std::string("metrics: 2 lines"),
        std::string(R"({"epoch":1,"loss":1.7})"), std::string("    batch_size = 64")}) {
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
