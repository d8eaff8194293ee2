#pragma once
/// @file hdf5.hpp
/// Move-only RAII ownership of HDF5 identifiers and a checked-call macro, shared by dataset
/// files, model files and (later) checkpoints.

#include <hdf5.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

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
  /// Gives up ownership and returns the identifier, e.g. to close a file with a checked H5Fclose.
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// Serialises HDF5 use: Debian's HDF5 is built without thread safety, and the checkpoint
/// writer's thread uses it while the main thread may write model.h5. Every entry point that
/// calls HDF5 holds this (recursive) lock for its whole duration.
[[nodiscard]] std::unique_lock<std::recursive_mutex> lock_library();

/// Turns off HDF5's automatic error-stack printing (conflux reports errors itself). Idempotent.
void silence_error_stack() noexcept;

/// A variable-length UTF-8 string type: read as str by h5py and printed plainly by h5dump.
Handle string_type();

/// Creates the scalar string attribute `name` on `loc` (a file, group or dataset).
void write_string_attribute(hid_t loc, const char* name, const std::string& value);

/// Creates the 1-D string-array attribute `name` on `loc`.
void write_strings_attribute(hid_t loc, const char* name, const std::vector<std::string>& values);

/// Reads the scalar string attribute `name` of `loc`, fixed- or variable-length; "" when the
/// attribute is not a string. Throws RuntimeError when it is missing or unreadable.
std::string read_string_attribute(hid_t loc, const char* name);

}  // namespace conflux::h5

/// Checks an herr_t/hid_t result of an HDF5 call: negative throws RuntimeError naming the call.
#define CONFLUX_H5_CHECK(call)                              \
  do {                                                      \
    if ((call) < 0) [[unlikely]]                            \
      CONFLUX_RUNTIME_ERROR("HDF5 call failed: {}", #call); \
  } while (0)
