#include "conflux/hdf5/rows.hpp"

namespace conflux::h5 {

RowReader::RowReader(Dataset dataset) : dims_(dataset.dims()) {
  const auto lock = lock_library();
  dataset_.emplace(std::move(dataset));
}

RowReader::~RowReader() {
  // Closing the dataset may close its file too: an HDF5 call like any other.
  const auto lock = lock_library();
  dataset_.reset();
}

}  // namespace conflux::h5
