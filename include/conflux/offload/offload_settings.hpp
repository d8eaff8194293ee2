#pragma once
/// @file offload_settings.hpp
/// What the config says about one trainer's offload ratio: where it starts (data.offload_ratio,
/// data.offload_ratios or "auto") and how the ratio controller and the window meter that tune
/// it are set up ([profile]).

#include <cstddef>
#include <vector>

#include "conflux/offload/ratio_controller.hpp"

namespace conflux {
class Config;
}

namespace conflux::offload {

/// One trainer's offload settings, read from the config.
struct OffloadSettings {
  double start_ratio = 0;  ///< data.offload_ratios[t], else data.offload_ratio; 0 with "auto"
  bool automatic = false;  ///< data.offload_ratio = "auto": the ratio controller sets it
  double window_s = 0.5;   ///< profile.interval_s: the window meter's window
  /// Steps after which a window ends, so that the controller's warm-up and start-up
  /// measurement end exactly there.
  std::vector<std::size_t> window_ends;
  RatioControllerOptions controller;  ///< from [profile]
};

/// The offload settings of trainer `trainer` (0-based) in `config`.
OffloadSettings offload_settings(const Config& config, int trainer);

}  // namespace conflux::offload
