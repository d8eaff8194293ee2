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

std::unique_lock<std::recursive_mutex> lock_library() {
  static std::recursive_mutex library;  // HDF5's own state is process-wide too
  return std::unique_lock(library);
}

void silence_error_stack() noexcept {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Handle string_type() {
  Handle type(H5Tcopy(H5T_C_S1), "copy the string type");
  CONFLUX_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  CONFLUX_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

void write_string_attribute(hid_t loc, const char* name, const std::string& value) {
  const Handle type = string_type();
  const Handle space(H5Screate(H5S_SCALAR), "create a scalar dataspace");
  const Handle attr(H5Acreate2(loc, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    "create a string attribute");
  const char* text = value.c_str();
  CONFLUX_H5_CHECK(H5Awrite(attr.get(), type.get(), &text));
}

void write_strings_attribute(hid_t loc, const char* name, const std::vector<std::string>& values) {
  const Handle type = string_type();
  const hsize_t dims[1] = {values.size()};
  const Handle space(H5Screate_simple(1, dims, nullptr), "create a dataspace");
  const Handle attr(H5Acreate2(loc, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    "create a string-array attribute");
  std::vector<const char*> texts;
  texts.reserve(values.size());
  for (const std::string& v : values) texts.push_back(v.c_str());
  CONFLUX_H5_CHECK(H5Awrite(attr.get(), type.get(), texts.data()));
}

std::string read_string_attribute(hid_t loc, const char* name) {
  const Handle attr(H5Aopen(loc, name, H5P_DEFAULT), "open a string attribute");
  const Handle type(H5Aget_type(attr.get()), "get an attribute type");
  if (H5Tget_class(type.get()) != H5T_STRING) return {};
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    CONFLUX_H5_CHECK(H5Aread(attr.get(), type.get(), &text));
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  std::string value(H5Tget_size(type.get()), '\0');
  CONFLUX_H5_CHECK(H5Aread(attr.get(), type.get(), value.data()));
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

}  // namespace conflux::h5
