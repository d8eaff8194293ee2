#pragma once
/// @file types.hpp
/// The element types conflux stores in HDF5 files: the numeric ones in one table (adding a type
/// is one specialisation of h5::Element) and the two string types.

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "conflux/hdf5/handle.hpp"

namespace conflux::h5 {

/// How one numeric element type is stored: its name, its size and its HDF5 types.
struct ElementType {
  const char* name;        ///< "uint8", "int32", ..., "float64" (the checkpoint checksum's names)
  std::size_t size;        ///< bytes per element
  H5T_class_t type_class;  ///< H5T_INTEGER or H5T_FLOAT
  bool is_signed;          ///< for integers: two's complement rather than unsigned
  hid_t (*file_type)();    ///< the little-endian type files store
  hid_t (*memory_type)();  ///< the native type in memory
};

/// The ElementType of the C++ type T, as Element<T>::type; only the types below have one.
template <typename T>
struct Element;

// HDF5's type identifiers are run-time values (the library is initialised on first use), so
// the table holds functions that return them.

template <>
struct Element<std::uint8_t> {
  static constexpr ElementType type{
      "uint8", 1, H5T_INTEGER, false, [] { return H5T_STD_U8LE; }, [] { return H5T_NATIVE_UINT8; }};
};
template <>
struct Element<std::int32_t> {
  static constexpr ElementType type{
      "int32", 4, H5T_INTEGER, true, [] { return H5T_STD_I32LE; }, [] { return H5T_NATIVE_INT32; }};
};
template <>
struct Element<std::uint32_t> {
  static constexpr ElementType type{"uint32",
                                    4,
                                    H5T_INTEGER,
                                    false,
                                    [] { return H5T_STD_U32LE; },
                                    [] { return H5T_NATIVE_UINT32; }};
};
template <>
struct Element<std::int64_t> {
  static constexpr ElementType type{
      "int64", 8, H5T_INTEGER, true, [] { return H5T_STD_I64LE; }, [] { return H5T_NATIVE_INT64; }};
};
template <>
struct Element<std::uint64_t> {
  static constexpr ElementType type{"uint64",
                                    8,
                                    H5T_INTEGER,
                                    false,
                                    [] { return H5T_STD_U64LE; },
                                    [] { return H5T_NATIVE_UINT64; }};
};
template <>
struct Element<float> {
  static constexpr ElementType type{"float32",
                                    4,
                                    H5T_FLOAT,
                                    true,
                                    [] { return H5T_IEEE_F32LE; },
                                    [] { return H5T_NATIVE_FLOAT; }};
};
template <>
struct Element<double> {
  static constexpr ElementType type{"float64",
                                    8,
                                    H5T_FLOAT,
                                    true,
                                    [] { return H5T_IEEE_F64LE; },
                                    [] { return H5T_NATIVE_DOUBLE; }};
};

/// The ElementType of T.
template <typename T>
constexpr const ElementType& element_type() {
  static_assert(sizeof(T) == Element<T>::type.size);
  return Element<T>::type;
}

/// A fixed-length, NUL-padded UTF-8 string type `width` bytes wide. Errors name `file` and
/// `object`, the file and object it is made for.
Handle fixed_string_type(std::size_t width, const std::string& file, const std::string& object);

/// A variable-length UTF-8 string type: read as str by h5py and printed plainly by h5dump.
Handle variable_string_type(const std::string& file, const std::string& object);

}  // namespace conflux::h5
