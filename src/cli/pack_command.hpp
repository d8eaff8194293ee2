#pragma once
// `conflux data pack`: packs an image folder into HDF5 shards (docs/datasets.md, "Packs").

#include <string>
#include <vector>

namespace conflux::cli {

/// Parses the arguments after `data pack`, writes the pack and prints what it wrote; 0, or an
/// Error.
int cmd_data_pack(const std::vector<std::string>& args);

}  // namespace conflux::cli
