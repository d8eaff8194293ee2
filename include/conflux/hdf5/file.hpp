#pragma once
/// @file file.hpp
/// HDF5 files as conflux's formats (checkpoints, dataset files, model files) write and read
/// them: typed datasets and attributes addressed by their path in the file, every call checked
/// by the error policy of handle.hpp, every error naming the file and the object.

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "conflux/hdf5/handle.hpp"
#include "conflux/hdf5/types.hpp"

namespace conflux::h5 {

/// Dimensions of a dataset; empty for a scalar.
using Dims = std::vector<hsize_t>;

/// "[512,784]": dimensions as error messages print them ("[]" for a scalar).
std::string dims_string(std::span<const hsize_t> dims);

/// How a new file is made. The defaults are HDF5's own.
struct CreateOptions {
  bool v18_objects = false;           ///< only HDF5 1.8 object formats (metadata checksums)
  bool strict_close = false;          ///< close() fails, rather than defers, while objects are open
  bool create_parent_groups = false;  ///< a dataset "/a/b/c" creates /a and /a/b as needed
  bool utf8_link_names = false;       ///< new links are marked UTF-8
  /// No creation/modification times in object headers, so that writing the same content twice
  /// gives the same bytes (packs, docs/datasets.md).
  bool no_object_times = false;
};

/// How an existing file is opened.
struct OpenOptions {
  std::string label{};    ///< what errors call the file, e.g. "checkpoint x.h5"; empty: its path
  bool writable = false;  ///< read-write rather than read-only
  /// Bytes of each dataset's chunk cache (0: HDF5's 1 MiB). Rows read one at a time from
  /// chunks larger than the cache would decompress the whole chunk on every read.
  std::size_t chunk_cache_bytes = 0;
};

/// How a new numeric dataset is stored. The defaults: contiguous, uncompressed, HDF5's fill.
struct DatasetOptions {
  Dims chunk{};            ///< chunk dimensions; empty: contiguous
  unsigned deflate = 0;    ///< deflate level of the chunks (0: none; needs `chunk`)
  bool skip_fill = false;  ///< write no fill values first: the data follows at once
};

/// How a dataset's stored element type must match the one it is read as.
struct ReadOptions {
  bool convert = false;  ///< accept any type of the same class (HDF5 converts); else exactly it
};

/// How a string is stored.
enum class StringStorage {
  kFixedLength,     ///< NUL-padded UTF-8 in the object itself (covered by metadata checksums)
  kVariableLength,  ///< UTF-8 in HDF5's global heap (what h5py reads as str)
};

/// A dataset opened for reading: its element type checked and its dimensions known. Use and
/// destroy it while the File it came from is open (the File holds the library lock).
class Dataset {
 public:
  /// Its path in the file.
  const std::string& path() const noexcept { return path_; }
  /// Its dimensions (empty: a scalar).
  const Dims& dims() const noexcept { return dims_; }
  /// Its number of elements (strings for a string dataset).
  std::uint64_t element_count() const noexcept { return count_; }
  /// InputError naming the file and the dataset unless it has `rank` dimensions.
  void require_rank(std::size_t rank) const;
  /// Reads every element into `out`, which holds element_count() of the type it was opened as.
  template <typename T>
  void read_into(std::span<T> out) const {
    read_elements(element_type<T>(), out.data(), out.size());
  }
  /// Reads every element.
  template <typename T>
  std::vector<T> read() const {
    std::vector<T> values(count_);
    read_into(std::span<T>(values));
    return values;
  }
  /// Reads the strings of a string dataset; each ends at its first NUL.
  std::vector<std::string> read_strings() const;
  /// Reads `count` rows (slices along the first dimension) from row `first` into `out`, which
  /// holds count * (elements per row) of the type it was opened as. RuntimeError when the rows
  /// lie outside the dataset.
  template <typename T>
  void read_rows(std::uint64_t first, std::uint64_t count, std::span<T> out) const {
    read_row_elements(element_type<T>(), first, count, out.data(), out.size());
  }
  /// The byte offset of a contiguous dataset's data in its file (what pread() may read
  /// directly); InputError naming the file and dataset when it is chunked or not allocated.
  std::uint64_t file_offset() const;

 private:
  friend class File;
  // Reads the dimensions of `dataset`, whose elements are `element_size` bytes, refusing a
  // shape that a file of `file_size` bytes (0: unknown) cannot hold.
  Dataset(std::string file_label, std::string path, Handle dataset, std::size_t element_size,
          std::uint64_t file_size);
  void read_elements(const ElementType& type, void* out, std::size_t count) const;
  void read_row_elements(const ElementType& type, std::uint64_t first, std::uint64_t count,
                         void* out, std::size_t out_count) const;

  std::string file_label_;
  std::string path_;
  Handle dataset_;
  const ElementType* element_ = nullptr;  // null: a string dataset
  Dims dims_;
  std::uint64_t count_ = 0;
  std::size_t string_width_ = 0;
};

/// One open HDF5 file. Holds the library lock (lock_library()) while it lives. A file made by
/// create() that is destroyed without close() is discarded: its last writes go nowhere (see
/// src/hdf5/file.cpp), so a failed write never leaves HDF5 with a dangling file.
class File {
 public:
  /// Creates (truncates) the file at `path` for writing; errors call it by its path.
  static File create(const std::filesystem::path& path, const CreateOptions& options = {});
  /// Opens an existing file. InputError "<label>: no such file", "not a regular file" or
  /// "truncated or not an HDF5 file" when it cannot be an HDF5 file.
  static File open(const std::filesystem::path& path, const OpenOptions& options = {});
  File(File&&) noexcept = default;
  File& operator=(File&&) = delete;
  ~File();

  /// What errors call the file.
  const std::string& label() const noexcept { return label_; }
  /// Its size in bytes when it was opened (0 for a created file).
  std::uint64_t size_at_open() const noexcept { return size_at_open_; }
  /// Flushes (when writable) and closes it, checked: a failed last write is a RuntimeError.
  void close();

  /// True when every component of `path` exists (the last may be any object or a link).
  bool exists(const std::string& path) const;
  /// InputError "<label>: missing group <path>" unless `path` is a group.
  void require_group(const std::string& path) const;
  /// The number of links in the group at `path`.
  std::uint64_t link_count(const std::string& path) const;
  /// Creates the group at `path`.
  void create_group(const std::string& path);

  /// Creates the dataset `path` of `dims` elements of `type` from `data` (in memory order).
  void write_elements(const std::string& path, const ElementType& type,
                      std::span<const hsize_t> dims, const void* data,
                      const DatasetOptions& options = {});
  /// write_elements() for elements of type T.
  template <typename T>
  void write(const std::string& path, std::span<const hsize_t> dims, const T* data,
             const DatasetOptions& options = {}) {
    write_elements(path, element_type<T>(), dims, data, options);
  }
  /// Creates the scalar dataset `path` holding `value`.
  template <typename T>
  void write_scalar(const std::string& path, const T& value, const DatasetOptions& options = {}) {
    write_elements(path, element_type<T>(), {}, &value, options);
  }
  /// Creates the contiguous 1-D uint8 dataset `path` of `bytes` elements with its space
  /// allocated now and no fill written, and returns the byte offset of its data in the file:
  /// the caller writes the data there itself (pwrite) after close(), without a buffer of it.
  std::uint64_t reserve_bytes(const std::string& path, std::uint64_t bytes);
  /// Creates the fixed-length string dataset `path` (dims empty: one string, a scalar), as wide
  /// as its longest string (at least 1 byte).
  void write_strings(const std::string& path, std::span<const hsize_t> dims,
                     std::span<const std::string> values);

  /// Opens the dataset `path` to read it as `type`. InputError naming the file and the path
  /// when it is missing, not a dataset, not of that type, or larger than the file could hold.
  Dataset open_dataset(const std::string& path, const ElementType& type,
                       const ReadOptions& options = {}) const;
  /// open_dataset() for elements of type T.
  template <typename T>
  Dataset open_dataset(const std::string& path, const ReadOptions& options = {}) const {
    return open_dataset(path, element_type<T>(), options);
  }
  /// Opens the fixed-length string dataset `path` (InputError like open_dataset()).
  Dataset open_string_dataset(const std::string& path) const;
  /// Reads the scalar dataset `path` of type T.
  template <typename T>
  T read_scalar(const std::string& path) const {
    const Dataset dataset = open_dataset<T>(path);
    dataset.require_rank(0);
    T value{};
    dataset.read_into(std::span<T>(&value, 1));
    return value;
  }
  /// Reads the 1-D dataset `path` of type T.
  template <typename T>
  std::vector<T> read_vector(const std::string& path) const {
    const Dataset dataset = open_dataset<T>(path);
    dataset.require_rank(1);
    return dataset.read<T>();
  }
  /// Reads the scalar fixed-length string dataset `path`.
  std::string read_string(const std::string& path) const;
  /// Reads the 1-D fixed-length string dataset `path`.
  std::vector<std::string> read_strings(const std::string& path) const;

  /// True when the object at `object` ("/": the root group) has the attribute `name`.
  bool has_attribute(const std::string& object, const char* name) const;
  /// Creates the scalar attribute `name` of `type` on `object` holding `*value`.
  void write_attribute_element(const std::string& object, const char* name, const ElementType& type,
                               const void* value);
  /// write_attribute_element() for a value of type T.
  template <typename T>
  void write_attribute(const std::string& object, const char* name, const T& value) {
    write_attribute_element(object, name, element_type<T>(), &value);
  }
  /// Creates the scalar string attribute `name` on `object`.
  void write_string_attribute(const std::string& object, const char* name, const std::string& value,
                              StringStorage storage);
  /// Creates the variable-length string-array attribute `name` on `object` (empty: a null
  /// dataspace, which every reader takes for "no values").
  void write_strings_attribute(const std::string& object, const char* name,
                               const std::vector<std::string>& values);
  /// Reads the single number in attribute `name` of `object` as `type` (HDF5 converts within
  /// the class). InputError when it is missing or not one number of that class.
  void read_attribute_element(const std::string& object, const char* name, const ElementType& type,
                              void* out) const;
  /// read_attribute_element() as type T.
  template <typename T>
  T read_attribute(const std::string& object, const char* name) const {
    T value{};
    read_attribute_element(object, name, element_type<T>(), &value);
    return value;
  }
  /// Reads the string attribute `name` of `object`: fixed- or variable-length, exactly one.
  std::string read_string_attribute(const std::string& object, const char* name) const;
  /// Reads the string attribute `name` of `object`: a scalar, a 1-D array or a null dataspace.
  std::vector<std::string> read_strings_attribute(const std::string& object,
                                                  const char* name) const;

 private:
  File(std::unique_lock<std::recursive_mutex> lock, std::string label);
  Handle open_object(const std::string& path) const;
  Handle open_dataset_handle(const std::string& path) const;
  Handle open_attribute(const std::string& object, const char* name) const;
  Handle create_attribute(const std::string& object, const char* name, hid_t type, hid_t space);
  Handle dataset_create_plist() const;
  void discard() noexcept;

  std::unique_lock<std::recursive_mutex> lock_;  // first: released after every handle closes
  std::string label_;
  std::uint64_t size_at_open_ = 0;
  bool writable_ = false;
  bool discard_unless_closed_ = false;
  bool no_object_times_ = false;
  Handle link_create_;  // link-creation properties of new objects; empty: HDF5's defaults
  Handle file_;
};

}  // namespace conflux::h5
