#pragma once
/// @file hdf5.hpp
/// Move-only RAII ownership of HDF5 identifiers and a checked-call macro, shared by dataset
/// files, model files and (later) checkpoints.

#include <hdf5.h>

#include <string>
#include <utility>

#include "conflux/core/error.hpp"

namespace conflux::h5 {

/// Owns one HDF5 identifier (file, group, dataset, dataspace, datatype, attribute, plist)
/// and closes it with H5Idec_ref on destruction.
class Handle {
 public:
  Handle() = default;
  /// Takes ownership of id; throws RuntimeError naming `what` when id is negative.
  Handle(hid_t id, const char* what);
  ~Handle();
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  /// The raw identifier for HDF5 calls.
  hid_t get() const noexcept { return id_; }
  /// True when an identifier is held.
  explicit operator bool() const noexcept { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// Turns off HDF5's automatic error-stack printing (conflux reports errors itself). Idempotent.
void silence_error_stack() noexcept;

}  // namespace conflux::h5

/// Checks an herr_t/hid_t result of an HDF5 call: negative throws RuntimeError naming the call.
#define CONFLUX_H5_CHECK(call)                              \
  do {                                                      \
    if ((call) < 0) [[unlikely]]                            \
      CONFLUX_RUNTIME_ERROR("HDF5 call failed: {}", #call); \
  } while (0)
