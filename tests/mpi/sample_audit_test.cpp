// The exactly-once audit over all ranks: it passes when the ranks' batches partition the
// dataset, and fails on every rank when a sample is missing or used twice.
#include "conflux/train/sample_audit.hpp"

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "conflux/core/error.hpp"

namespace conflux::train {
namespace {

data::Batch batch_of(std::vector<std::uint32_t> samples) {
  data::Batch b;
  b.samples = std::move(samples);
  return b;
}

// Each rank records one batch; returns the audit's verdict for a dataset of `size` samples.
AuditResult audit(std::size_t size, std::vector<std::uint32_t> samples) {
  const auto world = comm::Communicator::world();
  testing::TempDir dir;
  SampleAudit a(size, dir.path() / "audit.csv", false);
  a.record(batch_of(std::move(samples)));
  return a.check_epoch(0, world, std::chrono::seconds(60));
}

TEST(SampleAudit, PassesWhenTheRanksPartitionTheDataset) {
  const auto world = comm::Communicator::world();
  const auto r = static_cast<std::uint32_t>(world.rank());
  const AuditResult result = audit(static_cast<std::size_t>(world.size()), {r});
  EXPECT_EQ(result.samples, static_cast<std::size_t>(world.size()));
  EXPECT_EQ(result.batches, static_cast<std::size_t>(world.size()));
}

TEST(SampleAudit, FailsEverywhereOnAMissingSample) {
  const auto world = comm::Communicator::world();
  const auto r = static_cast<std::uint32_t>(world.rank());
  EXPECT_THROW(audit(static_cast<std::size_t>(world.size()) + 1, {r}), RuntimeError);
}

TEST(SampleAudit, FailsEverywhereOnASampleUsedTwice) {
  const auto world = comm::Communicator::world();
  const auto r = static_cast<std::uint32_t>(world.rank());
  // Rank 0 also takes sample 1, which rank 1 uses too.
  std::vector<std::uint32_t> samples = {r};
  if (r == 0) samples.push_back(1);
  EXPECT_THROW(audit(static_cast<std::size_t>(world.size()), samples), RuntimeError);
}

}  // namespace
}  // namespace conflux::train
