#include "conflux/core/hdf5.hpp"

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

void silence_error_stack() noexcept {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

}  // namespace conflux::h5
