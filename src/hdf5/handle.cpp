#include "conflux/hdf5/handle.hpp"

namespace conflux::h5 {

Handle::Handle(hid_t id, const char* what) : id_(id) {
  CONFLUX_CHECK(id >= 0, "HDF5: could not {}", what);
}

Handle::~Handle() {
  if (id_ >= 0) H5Idec_ref(id_);
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Idec_ref(id_);
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
  }
  return *this;
}

std::unique_lock<std::recursive_mutex> lock_library() {
  static std::recursive_mutex library;  // HDF5's own state is process-wide too
  return std::unique_lock(library);
}

void silence_error_stack() noexcept {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string error_cause() {
  std::string cause;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* err, void* out) -> herr_t {
        if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
        return 0;
      },
      &cause);
  // A failed system call reads "... errno = 28, error message = 'No space left on device', ...".
  constexpr std::string_view kMarker = "error message = '";
  if (const auto at = cause.find(kMarker); at != std::string::npos) {
    const auto begin = at + kMarker.size();
    const auto end = cause.find('\'', begin);
    if (end != std::string::npos) return cause.substr(begin, end - begin);
  }
  return cause.empty() ? "unknown HDF5 error" : cause;
}

void throw_failed_call(std::string_view call, std::string_view file, std::string_view object,
                       const char* source, int line) {
  std::string cause = error_cause();  // first: any further HDF5 call clears the stack
  const std::string_view function = call.substr(0, call.find('('));
  std::string message = object.empty()
                            ? fmt::format("{}: {} failed: {}", file, function, cause)
                            : fmt::format("{}: {}: {} failed: {}", file, object, function, cause);
  throw RuntimeError(std::move(message), source, line);
}

}  // namespace conflux::h5
