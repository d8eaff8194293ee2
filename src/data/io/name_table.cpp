#include "conflux/data/io/name_table.hpp"

#include <limits>

#include "conflux/core/error.hpp"

namespace conflux::data {

void NameTable::push_back(std::string_view name) {
  CONFLUX_CHECK(blob_.size() + name.size() <= std::numeric_limits<std::uint32_t>::max(),
                "name table: more than 4 GiB of names (at name {}: '{}')", ends_.size(), name);
  blob_.append(name);
  ends_.push_back(static_cast<std::uint32_t>(blob_.size()));
}

void NameTable::shrink_to_fit() {
  blob_.shrink_to_fit();
  ends_.shrink_to_fit();
}

}  // namespace conflux::data
