#include "conflux/offload/remote_schedule.hpp"

#include <algorithm>

#include "conflux/comm/communicator.hpp"

namespace conflux::offload {

RemoteSchedule::RemoteSchedule(double ratio) {
  set_ratio(ratio);
}

void RemoteSchedule::set_ratio(double ratio) noexcept {
  state_.ratio = std::clamp(ratio, 0.0, 1.0);
}

void RemoteSchedule::restore(const ScheduleState& state) noexcept {
  set_ratio(state.ratio);
  state_.credit = state.credit;
}

bool RemoteSchedule::next_is_remote() noexcept {
  state_.credit += state_.ratio;
  // The tolerance keeps ratios like 0.1 (inexact in binary) from losing a batch to rounding.
  if (state_.credit >= 1.0 - 1e-9) {
    state_.credit -= 1.0;
    return true;
  }
  return false;
}

std::vector<ScheduleState> gather_schedule_states(const comm::Communicator& trainers,
                                                  const ScheduleState& own,
                                                  std::chrono::duration<double> timeout) {
  // Each trainer fills its slot; the sum gathers them everywhere.
  const auto n = static_cast<std::size_t>(trainers.size());
  const auto t = static_cast<std::size_t>(trainers.rank());
  std::vector<double> slots(2 * n, 0.0);
  slots[2 * t] = own.ratio;
  slots[2 * t + 1] = own.credit;
  trainers.allreduce_sum(slots, timeout);
  std::vector<ScheduleState> states(n);
  for (std::size_t i = 0; i < n; ++i) states[i] = {slots[2 * i], slots[2 * i + 1]};
  return states;
}

}  // namespace conflux::offload
