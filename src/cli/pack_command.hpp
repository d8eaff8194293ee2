#pragma once
// `conflux data pack`: packs an image folder into HDF5 shards (docs/datasets.md, "Packs").

#include "command.hpp"

namespace conflux::cli {

/// The `data pack` action of the `data` group.
const Command& data_pack_command();

}  // namespace conflux::cli
