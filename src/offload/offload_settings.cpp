#include "conflux/offload/offload_settings.hpp"

#include "conflux/config/config.hpp"

namespace conflux::offload {

OffloadSettings offload_settings(const Config& config, int trainer) {
  const DataSection& d = config.data();
  const ProfileSection& p = config.profile();
  OffloadSettings s;
  // With "auto", data.offload_ratio is 0: the controller starts every trainer there.
  s.start_ratio = d.offload_ratio_for(trainer);
  s.automatic = d.offload_auto;
  s.window_s = p.interval_s;
  const auto warmup = static_cast<std::size_t>(p.initial_steps);
  s.window_ends = {warmup, warmup + static_cast<std::size_t>(p.steps)};
  s.controller = {.initial_steps = static_cast<int>(p.initial_steps),
                  .profile_steps = static_cast<int>(p.steps),
                  .bottleneck_threshold = p.bottleneck_threshold,
                  .hysteresis = p.hysteresis};
  return s;
}

}  // namespace conflux::offload
