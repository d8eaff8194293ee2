#pragma once
/// @file rows.hpp
/// A dataset kept open after its h5::File is gone, for reading rows from several threads: the
/// streamed HDF5 sources read one sample at a time for the whole run, while h5::File holds the
/// library lock for its life (handle.hpp). Every call here takes that lock for just the call.

#include <cstdint>
#include <optional>
#include <span>

#include "conflux/hdf5/file.hpp"

namespace conflux::h5 {

/// One dataset open for row reads from any thread (serialised by the library lock).
class RowReader {
 public:
  /// Takes over `dataset` (opened from a File that may then be closed: HDF5 keeps the file
  /// open while the dataset is).
  explicit RowReader(Dataset dataset);
  ~RowReader();
  RowReader(const RowReader&) = delete;
  RowReader& operator=(const RowReader&) = delete;

  /// Its dimensions.
  const Dims& dims() const noexcept { return dims_; }
  /// Dataset::read_rows() under the library lock.
  template <typename T>
  void read_rows(std::uint64_t first, std::uint64_t count, std::span<T> out) const {
    const auto lock = lock_library();
    dataset_->read_rows(first, count, out);
  }

 private:
  std::optional<Dataset> dataset_;
  Dims dims_;
};

}  // namespace conflux::h5
