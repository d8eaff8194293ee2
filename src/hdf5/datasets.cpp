// h5::File's datasets: creating and writing them, opening them with their type and shape
// checked, and h5::Dataset's reads.

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "conflux/hdf5/file.hpp"

namespace conflux::h5 {
namespace {

// The product of `dims`, or nullopt when it does not fit in 64 bits.
std::optional<std::uint64_t> product(std::span<const hsize_t> dims) {
  std::uint64_t n = 1;
  for (const hsize_t d : dims) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

// A dataspace of `dims` (a scalar one when empty).
hid_t create_space(std::span<const hsize_t> dims) {
  if (dims.empty()) return H5Screate(H5S_SCALAR);
  return H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
}

// True when the stored `type` is `want` (same class, size and, for integers, sign), or with
// `convert` of the same class (HDF5 converts on reading).
bool type_matches(hid_t type, const ElementType& want, bool convert, const std::string& file,
                  const std::string& object) {
  const H5T_class_t cls = CONFLUX_H5_CHECK(H5Tget_class(type), file, object);
  if (cls != want.type_class) return false;
  if (convert) return true;
  if (H5Tget_size(type) != want.size) return false;
  if (cls != H5T_INTEGER) return true;
  const H5T_sign_t sign = CONFLUX_H5_CHECK(H5Tget_sign(type), file, object);
  return (sign == H5T_SGN_2) == want.is_signed;
}

}  // namespace

void File::write_elements(const std::string& path, const ElementType& type,
                          std::span<const hsize_t> dims, const void* data,
                          const DatasetOptions& options) {
  CONFLUX_CHECK(options.deflate == 0 || !options.chunk.empty(),
                "{}: {}: deflate needs chunked storage", label_, path);
  const Handle space{CONFLUX_H5_CHECK(create_space(dims), label_, path)};
  const Handle create = dataset_create_plist();
  if (!options.chunk.empty()) {
    CONFLUX_H5_CHECK(
        H5Pset_chunk(create.get(), static_cast<int>(options.chunk.size()), options.chunk.data()),
        label_, path);
  }
  if (options.deflate > 0) {
    CONFLUX_H5_CHECK(H5Pset_deflate(create.get(), options.deflate), label_, path);
  }
  if (options.skip_fill) {
    CONFLUX_H5_CHECK(H5Pset_fill_time(create.get(), H5D_FILL_TIME_NEVER), label_, path);
  }
  const hid_t lcpl = link_create_ ? link_create_.get() : H5P_DEFAULT;
  const Handle dataset{CONFLUX_H5_CHECK(H5Dcreate2(file_.get(), path.c_str(), type.file_type(),
                                                   space.get(), lcpl, create.get(), H5P_DEFAULT),
                                        label_, path)};
  if (product(dims).value_or(0) > 0) {
    CONFLUX_H5_CHECK(
        H5Dwrite(dataset.get(), type.memory_type(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), label_,
        path);
  }
}

void File::write_strings(const std::string& path, std::span<const hsize_t> dims,
                         std::span<const std::string> values) {
  CONFLUX_CHECK(product(dims) == values.size(), "{}: {}: {} strings for shape {}", label_, path,
                values.size(), dims_string(dims));
  // Fixed-length strings live in the dataset's own contiguous bytes. (Variable-length strings
  // would go to HDF5's global heap, which has no checksums; damaged heap lengths crash HDF5
  // 1.10 on read.)
  std::size_t width = 1;
  for (const std::string& s : values) width = std::max(width, s.size());
  std::string bytes(width * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::memcpy(bytes.data() + i * width, values[i].data(), values[i].size());
  }
  const Handle type = fixed_string_type(width, label_, path);
  const Handle space{CONFLUX_H5_CHECK(create_space(dims), label_, path)};
  const hid_t lcpl = link_create_ ? link_create_.get() : H5P_DEFAULT;
  const Handle create = dataset_create_plist();
  const Handle dataset{CONFLUX_H5_CHECK(H5Dcreate2(file_.get(), path.c_str(), type.get(),
                                                   space.get(), lcpl, create.get(), H5P_DEFAULT),
                                        label_, path)};
  if (!bytes.empty()) {
    CONFLUX_H5_CHECK(
        H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()), label_,
        path);
  }
}

Handle File::dataset_create_plist() const {
  Handle create{CONFLUX_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE), label_, "")};
  if (no_object_times_) CONFLUX_H5_CHECK(H5Pset_obj_track_times(create.get(), 0), label_, "");
  return create;
}

std::uint64_t File::reserve_bytes(const std::string& path, std::uint64_t bytes) {
  const hsize_t dims[1] = {bytes};
  const Handle space{CONFLUX_H5_CHECK(create_space(dims), label_, path)};
  const Handle create = dataset_create_plist();
  CONFLUX_H5_CHECK(H5Pset_layout(create.get(), H5D_CONTIGUOUS), label_, path);
  // Early allocation gives the data its place (and offset) now; the caller writes it.
  CONFLUX_H5_CHECK(H5Pset_alloc_time(create.get(), H5D_ALLOC_TIME_EARLY), label_, path);
  CONFLUX_H5_CHECK(H5Pset_fill_time(create.get(), H5D_FILL_TIME_NEVER), label_, path);
  const hid_t lcpl = link_create_ ? link_create_.get() : H5P_DEFAULT;
  const Handle dataset{CONFLUX_H5_CHECK(H5Dcreate2(file_.get(), path.c_str(), H5T_STD_U8LE,
                                                   space.get(), lcpl, create.get(), H5P_DEFAULT),
                                        label_, path)};
  if (bytes == 0) return 0;
  const haddr_t offset = H5Dget_offset(dataset.get());
  CONFLUX_CHECK(offset != HADDR_UNDEF, "{}: {}: no file offset for its reserved {} bytes", label_,
                path, bytes);
  return offset;
}

Handle File::open_dataset_handle(const std::string& path) const {
  CONFLUX_REQUIRE(exists(path), "{}: missing dataset {}", label_, path);
  const hid_t id = H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT);
  CONFLUX_REQUIRE(id >= 0, "{}: {} is not a readable dataset ({})", label_, path, error_cause());
  return Handle{id};
}

Dataset File::open_dataset(const std::string& path, const ElementType& type,
                           const ReadOptions& options) const {
  Handle handle = open_dataset_handle(path);
  const Handle stored{CONFLUX_H5_CHECK(H5Dget_type(handle.get()), label_, path)};
  CONFLUX_REQUIRE(type_matches(stored.get(), type, options.convert, label_, path),
                  "{}: dataset {} is not of type {}{}", label_, path, type.name,
                  options.convert ? " (or another of its class)" : "");
  Dataset dataset(label_, path, std::move(handle), type.size, size_at_open_);
  dataset.element_ = &type;
  return dataset;
}

Dataset File::open_string_dataset(const std::string& path) const {
  Handle handle = open_dataset_handle(path);
  const Handle stored{CONFLUX_H5_CHECK(H5Dget_type(handle.get()), label_, path)};
  const bool fixed_string =
      CONFLUX_H5_CHECK(H5Tget_class(stored.get()), label_, path) == H5T_STRING &&
      CONFLUX_H5_CHECK(H5Tis_variable_str(stored.get()), label_, path) == 0;
  CONFLUX_REQUIRE(fixed_string, "{}: dataset {} is not of type string (fixed-length)", label_,
                  path);
  const std::size_t width = H5Tget_size(stored.get());
  CONFLUX_REQUIRE(width > 0, "{}: dataset {} has zero-width strings", label_, path);
  Dataset dataset(label_, path, std::move(handle), width, size_at_open_);
  dataset.string_width_ = width;
  return dataset;
}

std::string File::read_string(const std::string& path) const {
  const Dataset dataset = open_string_dataset(path);
  dataset.require_rank(0);
  return dataset.read_strings().front();
}

std::vector<std::string> File::read_strings(const std::string& path) const {
  const Dataset dataset = open_string_dataset(path);
  dataset.require_rank(1);
  return dataset.read_strings();
}

Dataset::Dataset(std::string file_label, std::string path, Handle dataset, std::size_t element_size,
                 std::uint64_t file_size)
    : file_label_(std::move(file_label)), path_(std::move(path)), dataset_(std::move(dataset)) {
  const Handle space{CONFLUX_H5_CHECK(H5Dget_space(dataset_.get()), file_label_, path_)};
  const int rank = CONFLUX_H5_CHECK(H5Sget_simple_extent_ndims(space.get()), file_label_, path_);
  dims_.resize(static_cast<std::size_t>(rank));
  CONFLUX_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims_.data(), nullptr), file_label_,
                   path_);
  const std::optional<std::uint64_t> count = product(dims_);
  CONFLUX_REQUIRE(count && *count <= std::numeric_limits<std::uint64_t>::max() / element_size,
                  "{}: dataset {} has shape {}, too large to read", file_label_, path_,
                  dims_string(dims_));
  count_ = *count;
  // Data stored as it is in memory (not chunked, so not compressed) must fit in the file: a
  // larger shape is a damaged header, refused before anything is allocated for it.
  const Handle create{CONFLUX_H5_CHECK(H5Dget_create_plist(dataset_.get()), file_label_, path_)};
  const H5D_layout_t layout = CONFLUX_H5_CHECK(H5Pget_layout(create.get()), file_label_, path_);
  const bool stored_plainly = layout == H5D_CONTIGUOUS || layout == H5D_COMPACT;
  CONFLUX_REQUIRE(!stored_plainly || file_size == 0 || count_ * element_size <= file_size,
                  "{}: dataset {} has shape {}, larger than the file", file_label_, path_,
                  dims_string(dims_));
}

void Dataset::require_rank(std::size_t rank) const {
  CONFLUX_REQUIRE(dims_.size() == rank, "{}: dataset {} has rank {}, expected {} (shape {})",
                  file_label_, path_, dims_.size(), rank, dims_string(dims_));
}

void Dataset::read_elements(const ElementType& type, void* out, std::size_t count) const {
  CONFLUX_CHECK(
      element_ != nullptr && std::string_view(element_->name) == type.name && count == count_,
      "{}: dataset {}: read as {} elements of {}, but it was opened for {} of {}", file_label_,
      path_, count, type.name, count_, element_ != nullptr ? element_->name : "string");
  if (count == 0) return;
  CONFLUX_H5_CHECK(H5Dread(dataset_.get(), type.memory_type(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out),
                   file_label_, path_);
}

void Dataset::read_row_elements(const ElementType& type, std::uint64_t first, std::uint64_t count,
                                void* out, std::size_t out_count) const {
  const std::uint64_t rows = dims_.empty() ? 0 : dims_[0];
  const std::uint64_t per_row = rows == 0 ? 0 : count_ / rows;
  CONFLUX_CHECK(element_ != nullptr && std::string_view(element_->name) == type.name &&
                    first <= rows && count <= rows - first && out_count == count * per_row,
                "{}: dataset {}: rows [{}, +{}) as {} elements of {} do not fit shape {} of {}",
                file_label_, path_, first, count, out_count, type.name, dims_string(dims_),
                element_ != nullptr ? element_->name : "string");
  if (count == 0 || per_row == 0) return;
  const Handle file_space{CONFLUX_H5_CHECK(H5Dget_space(dataset_.get()), file_label_, path_)};
  Dims start(dims_.size(), 0), extent = dims_;
  start[0] = first;
  extent[0] = count;
  CONFLUX_H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                       extent.data(), nullptr),
                   file_label_, path_);
  const Handle memory_space{CONFLUX_H5_CHECK(create_space(extent), file_label_, path_)};
  CONFLUX_H5_CHECK(H5Dread(dataset_.get(), type.memory_type(), memory_space.get(), file_space.get(),
                           H5P_DEFAULT, out),
                   file_label_, path_);
}

std::uint64_t Dataset::file_offset() const {
  const Handle create{CONFLUX_H5_CHECK(H5Dget_create_plist(dataset_.get()), file_label_, path_)};
  const H5D_layout_t layout = CONFLUX_H5_CHECK(H5Pget_layout(create.get()), file_label_, path_);
  CONFLUX_REQUIRE(layout == H5D_CONTIGUOUS, "{}: dataset {} is not stored contiguously",
                  file_label_, path_);
  if (count_ == 0) return 0;
  const haddr_t offset = H5Dget_offset(dataset_.get());
  CONFLUX_REQUIRE(offset != HADDR_UNDEF, "{}: dataset {} has no data in the file", file_label_,
                  path_);
  return offset;
}

std::vector<std::string> Dataset::read_strings() const {
  CONFLUX_CHECK(string_width_ > 0, "{}: dataset {} is not a string dataset", file_label_, path_);
  std::vector<std::string> values;
  if (count_ == 0) return values;
  const Handle type{CONFLUX_H5_CHECK(H5Dget_type(dataset_.get()), file_label_, path_)};
  std::string bytes(count_ * string_width_, '\0');
  CONFLUX_H5_CHECK(H5Dread(dataset_.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
                   file_label_, path_);
  values.reserve(count_);
  for (std::uint64_t i = 0; i < count_; ++i) {
    const std::string_view cell(bytes.data() + i * string_width_, string_width_);
    values.emplace_back(cell.substr(0, cell.find('\0')));
  }
  return values;
}

}  // namespace conflux::h5
