#pragma once
/// @file handle.hpp
/// The base of the one typed HDF5 layer every on-disk format uses (docs/design.md, area hdf5):
/// move-only ownership of HDF5 identifiers, the library lock, and the error policy. Files,
/// datasets and attributes are in file.hpp, the element types in types.hpp.
///
/// Error policy: every HDF5 call is checked (CONFLUX_H5_CHECK). A failed call is a
/// RuntimeError (exit 3) naming the file, the object and the call, with HDF5's own reason
/// (e.g. "No space left on device"); content that is not what a format expects (a missing
/// dataset, a wrong type, rank or shape) is an InputError (exit 2) naming the file and object.

#include <hdf5.h>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "conflux/core/error.hpp"

namespace conflux::h5 {

/// Owns one HDF5 identifier (file, group, dataset, dataspace, datatype, attribute, plist)
/// and closes it with H5Idec_ref on destruction.
class Handle {
 public:
  Handle() = default;
  /// Adopts `id` as it is: one already checked, e.g. by CONFLUX_H5_CHECK (negative: holds none).
  explicit Handle(hid_t id) noexcept : id_(id) {}
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
/// writer's thread uses it while the main thread may write model.h5. Every h5::File holds this
/// (recursive) lock for its whole life.
[[nodiscard]] std::unique_lock<std::recursive_mutex> lock_library();

/// Turns off HDF5's automatic error-stack printing (conflux reports errors itself). Idempotent.
void silence_error_stack() noexcept;

/// The innermost message of HDF5's error stack, reduced to the system error where there is one
/// (e.g. "No space left on device"). Call right after the failing call: the next API call
/// clears the stack.
std::string error_cause();

/// Throws the RuntimeError of a failed HDF5 call: "<file>: <object>: <call> failed: <cause>"
/// (no object part when `object` is empty). `call` may be the call's whole source text.
[[noreturn]] void throw_failed_call(std::string_view call, std::string_view file,
                                    std::string_view object, const char* source, int line);

/// Returns `result` unless it is negative (HDF5's failure value), then throw_failed_call().
template <typename T>
T checked(T result, std::string_view call, std::string_view file, std::string_view object,
          const char* source, int line) {
  if (result < 0) [[unlikely]]
    throw_failed_call(call, file, object, source, line);
  return result;
}

}  // namespace conflux::h5

/// Checks the herr_t/hid_t/htri_t result of an HDF5 call and yields it: a negative result
/// throws RuntimeError naming `file`, `object` (its HDF5 path) and the call, with HDF5's reason.
#define CONFLUX_H5_CHECK(call, file, object) \
  ::conflux::h5::checked((call), #call, (file), (object), __FILE__, __LINE__)
