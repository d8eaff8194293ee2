// h5::File's attributes: numbers and strings on any object, written and read with their type
// and shape checked.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "conflux/hdf5/file.hpp"

namespace conflux::h5 {
namespace {

// How messages name an object: "the root group" or its path.
std::string object_name(const std::string& object) {
  return object == "/" ? "the root group" : object;
}

// "attribute 'name' of /path": the object part of an attribute's error messages.
std::string attribute_where(const std::string& object, const char* name) {
  return fmt::format("attribute '{}' of {}", name, object_name(object));
}

const char* class_name(H5T_class_t cls) {
  return cls == H5T_INTEGER ? "integer" : cls == H5T_FLOAT ? "float" : "value";
}

// Frees the strings HDF5 allocated for a variable-length read.
class VariableStrings {
 public:
  VariableStrings(std::size_t n, hid_t type, hid_t space)
      : texts_(n, nullptr), type_(type), space_(space) {}
  ~VariableStrings() { H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, texts_.data()); }
  VariableStrings(const VariableStrings&) = delete;
  VariableStrings& operator=(const VariableStrings&) = delete;
  void* data() { return texts_.data(); }
  std::vector<std::string> strings() const {
    std::vector<std::string> values;
    for (const char* text : texts_) values.emplace_back(text != nullptr ? text : "");
    return values;
  }

 private:
  std::vector<char*> texts_;
  hid_t type_;
  hid_t space_;
};

}  // namespace

Handle File::open_attribute(const std::string& object, const char* name) const {
  CONFLUX_REQUIRE(has_attribute(object, name), "{}: missing attribute '{}' on {}", label_, name,
                  object_name(object));
  return Handle{
      CONFLUX_H5_CHECK(H5Aopen_by_name(file_.get(), object.c_str(), name, H5P_DEFAULT, H5P_DEFAULT),
                       label_, attribute_where(object, name))};
}

Handle File::create_attribute(const std::string& object, const char* name, hid_t type,
                              hid_t space) {
  const Handle target = open_object(object);
  return Handle{
      CONFLUX_H5_CHECK(H5Acreate2(target.get(), name, type, space, H5P_DEFAULT, H5P_DEFAULT),
                       label_, attribute_where(object, name))};
}

bool File::has_attribute(const std::string& object, const char* name) const {
  const Handle target = open_object(object);
  return CONFLUX_H5_CHECK(H5Aexists(target.get(), name), label_, attribute_where(object, name)) > 0;
}

void File::write_attribute_element(const std::string& object, const char* name,
                                   const ElementType& type, const void* value) {
  const std::string where = attribute_where(object, name);
  const Handle space{CONFLUX_H5_CHECK(H5Screate(H5S_SCALAR), label_, where)};
  const Handle attribute = create_attribute(object, name, type.file_type(), space.get());
  CONFLUX_H5_CHECK(H5Awrite(attribute.get(), type.memory_type(), value), label_, where);
}

void File::write_string_attribute(const std::string& object, const char* name,
                                  const std::string& value, StringStorage storage) {
  const std::string where = attribute_where(object, name);
  const Handle space{CONFLUX_H5_CHECK(H5Screate(H5S_SCALAR), label_, where)};
  if (storage == StringStorage::kVariableLength) {
    const Handle type = variable_string_type(label_, where);
    const Handle attribute = create_attribute(object, name, type.get(), space.get());
    const char* text = value.c_str();
    CONFLUX_H5_CHECK(H5Awrite(attribute.get(), type.get(), &text), label_, where);
    return;
  }
  // Fixed length: kept in the object header, which has a checksum in 1.8 object formats.
  std::string bytes = value;
  bytes.resize(std::max<std::size_t>(value.size(), 1), '\0');
  const Handle type = fixed_string_type(bytes.size(), label_, where);
  const Handle attribute = create_attribute(object, name, type.get(), space.get());
  CONFLUX_H5_CHECK(H5Awrite(attribute.get(), type.get(), bytes.data()), label_, where);
}

void File::write_strings_attribute(const std::string& object, const char* name,
                                   const std::vector<std::string>& values) {
  const std::string where = attribute_where(object, name);
  const hsize_t n = values.size();
  // A null dataspace says "empty array" without relying on zero-sized simple dataspaces.
  const Handle space{CONFLUX_H5_CHECK(
      n == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &n, nullptr), label_, where)};
  const Handle type = variable_string_type(label_, where);
  const Handle attribute = create_attribute(object, name, type.get(), space.get());
  if (n == 0) return;
  std::vector<const char*> texts;
  texts.reserve(values.size());
  for (const std::string& v : values) texts.push_back(v.c_str());
  CONFLUX_H5_CHECK(H5Awrite(attribute.get(), type.get(), texts.data()), label_, where);
}

void File::read_attribute_element(const std::string& object, const char* name,
                                  const ElementType& type, void* out) const {
  const std::string where = attribute_where(object, name);
  const Handle attribute = open_attribute(object, name);
  const Handle stored{CONFLUX_H5_CHECK(H5Aget_type(attribute.get()), label_, where)};
  const Handle space{CONFLUX_H5_CHECK(H5Aget_space(attribute.get()), label_, where)};
  const bool one_number =
      CONFLUX_H5_CHECK(H5Tget_class(stored.get()), label_, where) == type.type_class &&
      CONFLUX_H5_CHECK(H5Sget_simple_extent_npoints(space.get()), label_, where) == 1;
  CONFLUX_REQUIRE(one_number, "{}: attribute '{}' on {} is not a single {}", label_, name,
                  object_name(object), class_name(type.type_class));
  CONFLUX_H5_CHECK(H5Aread(attribute.get(), type.memory_type(), out), label_, where);
}

std::string File::read_string_attribute(const std::string& object, const char* name) const {
  std::vector<std::string> values = read_strings_attribute(object, name);
  CONFLUX_REQUIRE(values.size() == 1, "{}: attribute '{}' on {} is not a single string", label_,
                  name, object_name(object));
  return std::move(values.front());
}

std::vector<std::string> File::read_strings_attribute(const std::string& object,
                                                      const char* name) const {
  const std::string where = attribute_where(object, name);
  const Handle attribute = open_attribute(object, name);
  const Handle stored{CONFLUX_H5_CHECK(H5Aget_type(attribute.get()), label_, where)};
  const Handle space{CONFLUX_H5_CHECK(H5Aget_space(attribute.get()), label_, where)};
  CONFLUX_REQUIRE(CONFLUX_H5_CHECK(H5Tget_class(stored.get()), label_, where) == H5T_STRING,
                  "{}: attribute '{}' on {} is not a string attribute", label_, name,
                  object_name(object));
  const H5S_class_t shape = CONFLUX_H5_CHECK(H5Sget_simple_extent_type(space.get()), label_, where);
  if (shape == H5S_NULL) return {};
  CONFLUX_REQUIRE(shape == H5S_SCALAR ||
                      CONFLUX_H5_CHECK(H5Sget_simple_extent_ndims(space.get()), label_, where) == 1,
                  "{}: attribute '{}' on {} is not a scalar or a 1-D array", label_, name,
                  object_name(object));
  const auto n = static_cast<std::size_t>(
      CONFLUX_H5_CHECK(H5Sget_simple_extent_npoints(space.get()), label_, where));
  if (n == 0) return {};
  // Read through a copy of the stored type: the same character set and length kind, and for
  // fixed-length strings NUL padding whatever the writer padded with.
  const Handle memory{CONFLUX_H5_CHECK(H5Tcopy(stored.get()), label_, where)};
  if (CONFLUX_H5_CHECK(H5Tis_variable_str(stored.get()), label_, where) > 0) {
    VariableStrings texts(n, memory.get(), space.get());
    CONFLUX_H5_CHECK(H5Aread(attribute.get(), memory.get(), texts.data()), label_, where);
    return texts.strings();
  }
  const std::size_t width = H5Tget_size(stored.get());
  CONFLUX_REQUIRE(width > 0, "{}: attribute '{}' on {} has zero-width strings", label_, name,
                  object_name(object));
  CONFLUX_H5_CHECK(H5Tset_strpad(memory.get(), H5T_STR_NULLPAD), label_, where);
  std::vector<char> bytes(n * width);
  CONFLUX_H5_CHECK(H5Aread(attribute.get(), memory.get(), bytes.data()), label_, where);
  std::vector<std::string> values;
  for (std::size_t i = 0; i < n; ++i) {
    const char* text = bytes.data() + i * width;
    values.emplace_back(text, strnlen(text, width));
  }
  return values;
}

}  // namespace conflux::h5
