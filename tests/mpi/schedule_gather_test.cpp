// Gathering the trainers' offload schedules for a checkpoint: every rank gets every rank's
// ratio and credit, in rank order, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "conflux/comm/communicator.hpp"
#include "conflux/offload/remote_schedule.hpp"

namespace conflux::offload {
namespace {

ScheduleState state_of(int rank) {
  return {.ratio = 0.1 * rank, .credit = 1.0 / (3 + rank)};
}

TEST(ScheduleGather, EveryRankGetsEveryRanksStateInRankOrder) {
  const auto world = comm::Communicator::world();
  RemoteSchedule own;
  own.restore(state_of(world.rank()));
  const std::vector<ScheduleState> all =
      gather_schedule_states(world, own.state(), std::chrono::seconds(60));
  ASSERT_EQ(all.size(), static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) {
    EXPECT_EQ(all[static_cast<std::size_t>(r)].ratio, std::min(1.0, state_of(r).ratio)) << r;
    EXPECT_EQ(all[static_cast<std::size_t>(r)].credit, state_of(r).credit) << r;
  }
}

}  // namespace
}  // namespace conflux::offload
