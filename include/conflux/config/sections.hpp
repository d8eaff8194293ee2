#pragma once
/// @file sections.hpp
/// The typed sections of the experiment config, one struct per TOML table. Their members and
/// the members' defaults are expanded from keys.hpp, where each key's meaning is documented;
/// the few members below the expansions are derived from keys, not keys themselves.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conflux/config/keys.hpp"

/// One key as a member initialised with the key's default.
#define CONFLUX_KEY_MEMBER(section, name, type, default_value, ...) type name = default_value;
/// A hooked key as a member: the same, its value type column aside.
#define CONFLUX_HOOKED_MEMBER(section, name, type, value_type, default_value, ...) \
  type name = default_value;

namespace conflux {

/// [run]
struct RunSection {
  CONFLUX_RUN_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [cluster]
struct ClusterSection {
  CONFLUX_CLUSTER_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [data]
struct DataSection {
  CONFLUX_DATA_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
  bool offload_auto = false;  ///< offload_ratio = "auto": the profiler decides
  /// The offload ratio of trainer `t`.
  double offload_ratio_for(int t) const {
    return offload_ratios.empty() ? offload_ratio : offload_ratios[static_cast<std::size_t>(t)];
  }
};

/// [transform]: the sample transform's settings (data::TransformOptions adds the loaded plugin).
struct TransformSection {
  CONFLUX_TRANSFORM_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [train]
struct TrainSection {
  CONFLUX_TRAIN_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [checkpoint]
struct CheckpointSection {
  CONFLUX_CHECKPOINT_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [profile]: the step profiler, the offload controller and the timeline.
struct ProfileSection {
  CONFLUX_PROFILE_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [comm]: gradient synchronisation among trainers.
struct CommSection {
  CONFLUX_COMM_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [limits]: Lambda-like resource limits per rank.
struct LimitsSection {
  CONFLUX_LIMITS_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
  /// CPU share (vCPUs) the memory size buys; 0 when unlimited.
  double cpu_share() const { return memory_mb == 0 ? 0.0 : memory_mb / mb_per_vcpu; }
};

/// [prices]: price tables of the cost model (USD).
struct PricesSection {
  CONFLUX_PRICES_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

/// [fault]: fault injection for tests of the data service.
struct FaultSection {
  CONFLUX_FAULT_KEYS(CONFLUX_KEY_MEMBER, CONFLUX_HOOKED_MEMBER)
};

}  // namespace conflux

#undef CONFLUX_KEY_MEMBER
#undef CONFLUX_HOOKED_MEMBER
