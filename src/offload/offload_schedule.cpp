#include "conflux/offload/offload_schedule.hpp"

#include <algorithm>

namespace conflux::offload {

OffloadSchedule::OffloadSchedule(double ratio) {
  set_ratio(ratio);
}

void OffloadSchedule::set_ratio(double ratio) noexcept {
  ratio_ = std::clamp(ratio, 0.0, 1.0);
}

bool OffloadSchedule::next_is_remote() noexcept {
  credit_ += ratio_;
  // The tolerance keeps ratios like 0.1 (inexact in binary) from losing a batch to rounding.
  if (credit_ >= 1.0 - 1e-9) {
    credit_ -= 1.0;
    return true;
  }
  return false;
}

}  // namespace conflux::offload
