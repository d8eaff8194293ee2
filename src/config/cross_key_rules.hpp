#pragma once
// The rules between keys that no single key's range can say (K-Reduce batches against the
// trainer count, mean/std lengths, "auto" against the profiler). Private to src/config.

#include "conflux/config/config.hpp"

namespace conflux {

/// InputError naming where the offending key was set when `config` breaks a cross-key rule.
void check_cross_key_rules(const Config& config);

}  // namespace conflux
