// The checkpoint layout: its table of datasets and the checksum over them.

#include "conflux/ckpt/checkpoint_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "checkpoint_test_support.hpp"
#include "conflux/ckpt/checkpoint_reader.hpp"
#include "conflux/ckpt/checkpoint_writer.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;
using namespace conflux::ckpt::test_support;

using CheckpointLayoutTest = CheckpointTest;

// The checksums of two states as format version 3 defines them (pinned when /optimizer took
// its version-3 layout): a change of the layout or the checksum cannot go unnoticed.
TEST_F(CheckpointLayoutTest, ChecksumOfKnownStatesIsStable) {
  EXPECT_EQ(CheckpointLayout(filled_state()).checksum(), "crc32c:ece03bcb");
  EXPECT_EQ(CheckpointLayout(TrainingState{}).checksum(), "crc32c:0326765f");
  write_checkpoint(file_, filled_state());
  EXPECT_EQ(h5::File::open(file_).read_string_attribute("/", "checksum"), "crc32c:ece03bcb");
  EXPECT_EQ(read_verified_checkpoint(file_).checksum, "crc32c:ece03bcb");
}

// The layout lists every dataset once, sorted by path (the checksum's order), with its type.
TEST_F(CheckpointLayoutTest, LayoutListsEveryDatasetInPathOrder) {
  const TrainingState state = filled_state();
  const CheckpointLayout layout(state);
  const std::vector<LayoutEntry>& entries = layout.entries();
  ASSERT_EQ(entries.size(), 33u);  // 27 fixed datasets, 2 optimiser buffers and 4 tensors
  EXPECT_TRUE(std::ranges::is_sorted(entries, {}, &LayoutEntry::path));
  EXPECT_EQ(entries.front().path, "/accounting/audit_counts");
  EXPECT_EQ(entries.back().path, "/trainers/offload_ratio");
  for (const LayoutEntry& e : entries) {
    if (e.path == "/model/layer1.weight") {
      EXPECT_STREQ(e.type_name(), "float32");
      EXPECT_EQ(e.dims, (std::vector<hsize_t>{3, 4}));
    }
    if (e.path == "/optimizer/steps") {
      EXPECT_STREQ(e.type_name(), "uint64");
    }
    if (e.path == "/optimizer/buffers/exp_avg_sq") {
      EXPECT_STREQ(e.type_name(), "float32");
      EXPECT_EQ(e.dims, (std::vector<hsize_t>{23}));
    }
    if (e.path == "/run/metrics") {
      EXPECT_STREQ(e.type_name(), "string");
      EXPECT_EQ(e.strings.size(), 2u);
    }
  }
}

}  // namespace
}  // namespace conflux::ckpt
