#include "conflux/comm/roles.hpp"

#include <gtest/gtest.h>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/gradient_sync.hpp"

namespace conflux::comm {
namespace {

TEST(Roles, SplitsTrainersFirstThenWorkers) {
  const auto world = Communicator::world();
  for (int trainers = 1; trainers <= world.size(); ++trainers) {
    const int workers = world.size() - trainers;
    const RoleSplit split = split_roles(world, trainers, workers);
    const RoleLayout& l = split.layout;
    const bool trainer = world.rank() < trainers;
    EXPECT_EQ(l.role, trainer ? Role::kTrainer : Role::kWorker);
    EXPECT_EQ(l.role_rank, trainer ? world.rank() : world.rank() - trainers);
    EXPECT_EQ(split.role_comm.size(), trainer ? trainers : workers);
    EXPECT_EQ(split.role_comm.rank(), l.role_rank);
    EXPECT_EQ(l.trainers + l.workers, world.size());
    // Everything runs on this one node, so node-local ranks equal world ranks.
    EXPECT_EQ(l.node_local_size, world.size());
    EXPECT_EQ(l.node_local_rank, world.rank());
    if (!trainer) {
      EXPECT_EQ(l.worker_world_rank(l.role_rank), world.rank());
    }
  }
}

TEST(Roles, RoleCommunicatorsAreIndependent) {
  const auto world = Communicator::world();
  const RoleSplit split = split_roles(world, 1, world.size() - 1);
  std::vector<float> v{1.0f};
  split.role_comm.allreduce_sum(v, std::chrono::seconds(30));
  EXPECT_EQ(v[0], static_cast<float>(split.role_comm.size()));
}

TEST(Agreement, OneFailingRankStopsEveryRankWithItsCode) {
  const auto world = Communicator::world();
  const int bad = world.size() - 1;
  try {
    run_agreed(world, [&] {
      if (world.rank() == bad) CONFLUX_INPUT_ERROR("file x.bin: corrupt at byte offset 7");
    });
    FAIL() << "no failure reported";
  } catch (const AgreedFailure& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(e.failed_rank(), bad);
    EXPECT_NE(std::string(e.what()).find("corrupt at byte offset 7"), std::string::npos);
    if (world.rank() != bad) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("rank {} failed", bad)), std::string::npos);
    }
  }
  EXPECT_NO_THROW(run_agreed(world, [] {}));
}

// An allocation failure names the phase and the rank, not agreement.cpp (it used to say only
// "std::bad_alloc (src/comm/agreement.cpp:9)").
TEST(Agreement, OutOfMemoryNamesThePhaseAndTheRank) {
  const auto world = Communicator::world();
  try {
    run_agreed(world, "loading the data and building the model", [&] {
      if (world.rank() == 0) throw std::bad_alloc();
    });
    FAIL() << "no failure reported";
  } catch (const AgreedFailure& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find(
                  "rank 0: out of memory while loading the data and building the model"),
              std::string::npos)
        << e.what();
  }
}

TEST(GradientSync, SumsOverTrainers) {
  const auto world = Communicator::world();
  MpiAllreduceSync sync(world, std::chrono::seconds(30));
  std::vector<float> g(1000);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(world.rank() + i);
  sync.sum(g);
  const float ranks_sum = static_cast<float>(world.size() * (world.size() - 1) / 2);
  for (std::size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(g[i], ranks_sum + static_cast<float>(world.size() * i));
}

TEST(Communicator, BroadcastAndReductions) {
  const auto world = Communicator::world();
  EXPECT_EQ(world.broadcast(world.rank() == 0 ? "hello" : "", 0), "hello");
  EXPECT_EQ(world.allreduce_max(world.rank()), world.size() - 1);
  EXPECT_EQ(world.allreduce_min(world.rank()), 0);
}

}  // namespace
}  // namespace conflux::comm
