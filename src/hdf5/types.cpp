#include "conflux/hdf5/types.hpp"

namespace conflux::h5 {

Handle fixed_string_type(std::size_t width, const std::string& file, const std::string& object) {
  Handle type{CONFLUX_H5_CHECK(H5Tcopy(H5T_C_S1), file, object)};
  CONFLUX_H5_CHECK(H5Tset_size(type.get(), width), file, object);
  CONFLUX_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), file, object);
  CONFLUX_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, object);
  return type;
}

Handle variable_string_type(const std::string& file, const std::string& object) {
  Handle type{CONFLUX_H5_CHECK(H5Tcopy(H5T_C_S1), file, object)};
  CONFLUX_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE), file, object);
  CONFLUX_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, object);
  return type;
}

}  // namespace conflux::h5
