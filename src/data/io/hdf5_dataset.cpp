#include "conflux/data/io/hdf5_dataset.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/hdf5.hpp"

namespace conflux::data {
namespace {

using h5::Handle;

constexpr std::int32_t kFormatVersion = 1;
constexpr hsize_t kImagesPerChunk = 256;
// Level 4 is near level 9's ratio on image data at a fraction of the time; reading is
// insensitive to the level.
constexpr unsigned kDeflateLevel = 4;
// Limits that only a corrupt file exceeds; they also keep size arithmetic far from overflow.
constexpr std::int32_t kMaxChannels = 1024;
constexpr std::int32_t kMaxSide = 1 << 15;
constexpr std::int32_t kMaxClasses = 256;  // labels are uint8

constexpr const char* kSplitNames[] = {"train", "test"};

// ---------------------------------------------------------------------------------------------
// Writing

/// UTF-8 variable-length string type: every string attribute in the file uses it.
Handle vlen_string_type() {
  Handle type(H5Tcopy(H5T_C_S1), "copy the C string type");
  CONFLUX_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  CONFLUX_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

void write_int_attribute(hid_t object, const char* name, std::int32_t value) {
  Handle space(H5Screate(H5S_SCALAR), "create a scalar dataspace");
  Handle attr(H5Acreate2(object, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              fmt::format("create attribute {}", name).c_str());
  CONFLUX_H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT32, &value));
}

void write_string_attribute(hid_t object, const char* name, const std::string& value) {
  Handle type = vlen_string_type();
  Handle space(H5Screate(H5S_SCALAR), "create a scalar dataspace");
  Handle attr(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
              fmt::format("create attribute {}", name).c_str());
  const char* data = value.c_str();
  CONFLUX_H5_CHECK(H5Awrite(attr.get(), type.get(), &data));
}

void write_strings_attribute(hid_t object, const char* name,
                             const std::vector<std::string>& values) {
  Handle type = vlen_string_type();
  const hsize_t n = values.size();
  // A null dataspace says "empty array" without relying on zero-sized simple dataspaces.
  Handle space(n == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &n, nullptr),
               "create a string-array dataspace");
  Handle attr(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
              fmt::format("create attribute {}", name).c_str());
  if (n == 0) return;
  std::vector<const char*> data;
  data.reserve(values.size());
  for (const auto& v : values) data.push_back(v.c_str());
  CONFLUX_H5_CHECK(H5Awrite(attr.get(), type.get(), data.data()));
}

void write_sources(hid_t object, const std::vector<SourceFile>& sources) {
  std::vector<std::string> names, digests;
  for (const auto& s : sources) {
    names.push_back(s.name);
    digests.push_back(s.sha256);
  }
  write_strings_attribute(object, "source_files", names);
  write_strings_attribute(object, "source_sha256", digests);
}

void write_split(hid_t file, const char* split, const Dataset& ds) {
  Handle group(H5Gcreate2(file, split, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               fmt::format("create group /{}", split).c_str());
  const hsize_t n = ds.size();
  const hsize_t dims[4] = {n, static_cast<hsize_t>(ds.shape.channels),
                           static_cast<hsize_t>(ds.shape.height),
                           static_cast<hsize_t>(ds.shape.width)};
  Handle image_space(H5Screate_simple(4, dims, nullptr), "create the images dataspace");
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), "create a dataset-creation property list");
  if (n > 0) {  // a chunk may not be larger than a fixed-size dataset, so empty stays contiguous
    const hsize_t chunk[4] = {std::min(n, kImagesPerChunk), dims[1], dims[2], dims[3]};
    CONFLUX_H5_CHECK(H5Pset_chunk(dcpl.get(), 4, chunk));
    CONFLUX_H5_CHECK(H5Pset_deflate(dcpl.get(), kDeflateLevel));
  }
  Handle images(H5Dcreate2(group.get(), "images", H5T_STD_U8LE, image_space.get(), H5P_DEFAULT,
                           dcpl.get(), H5P_DEFAULT),
                fmt::format("create dataset /{}/images", split).c_str());
  Handle label_space(H5Screate_simple(1, &n, nullptr), "create the labels dataspace");
  Handle labels(H5Dcreate2(group.get(), "labels", H5T_STD_U8LE, label_space.get(), H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT),
                fmt::format("create dataset /{}/labels", split).c_str());
  if (n > 0) {
    CONFLUX_H5_CHECK(
        H5Dwrite(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.images.data()));
    CONFLUX_H5_CHECK(
        H5Dwrite(labels.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.labels.data()));
  }
  // Per-split provenance, so that reading restores each split's sources exactly; the root
  // attributes list all of them.
  write_sources(group.get(), ds.sources);
}

/// The writer's precondition: both splits describe the same dataset consistently.
void check_writable(const DatasetSplits& splits) {
  const Dataset& train = splits.train;
  CONFLUX_CHECK(train.shape.channels > 0 && train.shape.height > 0 && train.shape.width > 0,
                "dataset {}: image shape {}x{}x{} is not positive", train.name,
                train.shape.channels, train.shape.height, train.shape.width);
  CONFLUX_CHECK(train.num_classes > 0 && train.num_classes <= kMaxClasses &&
                    train.class_names.size() == static_cast<std::size_t>(train.num_classes),
                "dataset {}: {} classes with {} class names", train.name, train.num_classes,
                train.class_names.size());
  for (const Dataset* ds : {&splits.train, &splits.test}) {
    CONFLUX_CHECK(ds->name == train.name && ds->shape == train.shape &&
                      ds->num_classes == train.num_classes && ds->class_names == train.class_names,
                  "dataset {}: train and test splits differ in name, shape or classes", train.name);
    CONFLUX_CHECK(ds->images.size() == ds->size() * ds->shape.size(),
                  "dataset {}: {} image bytes for {} labels of {} bytes each", train.name,
                  ds->images.size(), ds->size(), ds->shape.size());
  }
}

void write_file(const std::filesystem::path& path, const DatasetSplits& splits) {
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CONFLUX_CHECK(id >= 0, "{}: cannot create HDF5 file", path.string());
  Handle file(id, "create file");
  const Dataset& ds = splits.train;
  write_int_attribute(file.get(), "format_version", kFormatVersion);
  write_string_attribute(file.get(), "name", ds.name);
  write_int_attribute(file.get(), "channels", ds.shape.channels);
  write_int_attribute(file.get(), "height", ds.shape.height);
  write_int_attribute(file.get(), "width", ds.shape.width);
  write_int_attribute(file.get(), "num_classes", ds.num_classes);
  write_strings_attribute(file.get(), "class_names", ds.class_names);
  std::vector<SourceFile> all_sources = splits.train.sources;
  for (const auto& s : splits.test.sources) {
    if (std::find(all_sources.begin(), all_sources.end(), s) == all_sources.end()) {
      all_sources.push_back(s);
    }
  }
  write_sources(file.get(), all_sources);
  write_split(file.get(), kSplitNames[0], splits.train);
  write_split(file.get(), kSplitNames[1], splits.test);
  // Surfaces write errors (disk full) here; closing through H5Idec_ref cannot report them.
  CONFLUX_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
}

// ---------------------------------------------------------------------------------------------
// Reading

/// Frees the strings HDF5 allocated for a variable-length read.
class VlenReclaim {
 public:
  VlenReclaim(hid_t type, hid_t space, void* buffer)
      : type_(type), space_(space), buffer_(buffer) {}
  ~VlenReclaim() { H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, buffer_); }
  VlenReclaim(const VlenReclaim&) = delete;
  VlenReclaim& operator=(const VlenReclaim&) = delete;

 private:
  hid_t type_;
  hid_t space_;
  void* buffer_;
};

/// Reads one file, turning every missing or malformed object into an InputError naming the
/// file and the object.
class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : file_name_(path.string()) {
    std::error_code ec;
    CONFLUX_REQUIRE(std::filesystem::is_regular_file(path, ec), "{}: no such file", file_name_);
    const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
    CONFLUX_REQUIRE(is_hdf5 > 0, "{}: not an HDF5 file", file_name_);
    const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    CONFLUX_REQUIRE(id >= 0, "{}: cannot open as an HDF5 file (corrupt?)", file_name_);
    file_ = Handle(id, "open file");
    root_ = Handle(H5Gopen2(file_.get(), "/", H5P_DEFAULT), "open the root group");
  }

  const std::string& file_name() const { return file_name_; }
  hid_t root() const { return root_.get(); }

  bool has_attribute(hid_t object, const char* name) const {
    const htri_t exists = H5Aexists(object, name);
    CONFLUX_H5_CHECK(exists);
    return exists > 0;
  }

  Handle open_attribute(hid_t object, const std::string& object_name, const char* name) const {
    CONFLUX_REQUIRE(has_attribute(object, name), "{}: missing attribute '{}' on {}", file_name_,
                    name, object_name);
    return Handle(H5Aopen(object, name, H5P_DEFAULT), "open attribute");
  }

  std::int32_t read_int(hid_t object, const std::string& object_name, const char* name) const {
    Handle attr = open_attribute(object, object_name, name);
    Handle type(H5Aget_type(attr.get()), "get attribute type");
    Handle space(H5Aget_space(attr.get()), "get attribute dataspace");
    CONFLUX_REQUIRE(
        H5Tget_class(type.get()) == H5T_INTEGER && H5Sget_simple_extent_npoints(space.get()) == 1,
        "{}: attribute '{}' on {} is not a single integer", file_name_, name, object_name);
    std::int32_t value = 0;
    CONFLUX_H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT32, &value));
    return value;
  }

  std::vector<std::string> read_strings(hid_t object, const std::string& object_name,
                                        const char* name) const {
    Handle attr = open_attribute(object, object_name, name);
    Handle type(H5Aget_type(attr.get()), "get attribute type");
    Handle space(H5Aget_space(attr.get()), "get attribute dataspace");
    CONFLUX_REQUIRE(H5Tget_class(type.get()) == H5T_STRING,
                    "{}: attribute '{}' on {} is not a string attribute", file_name_, name,
                    object_name);
    const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
    if (space_class == H5S_NULL) return {};
    CONFLUX_REQUIRE(space_class == H5S_SCALAR || H5Sget_simple_extent_ndims(space.get()) == 1,
                    "{}: attribute '{}' on {} is not a scalar or a 1-D array", file_name_, name,
                    object_name);
    const hssize_t points = H5Sget_simple_extent_npoints(space.get());
    CONFLUX_H5_CHECK(points);
    const auto n = static_cast<std::size_t>(points);
    std::vector<std::string> result;
    result.reserve(n);
    const htri_t variable = H5Tis_variable_str(type.get());
    CONFLUX_H5_CHECK(variable);
    if (n == 0) return result;
    if (variable > 0) {
      Handle mem_type = vlen_string_type();
      std::vector<char*> data(n, nullptr);
      CONFLUX_H5_CHECK(H5Aread(attr.get(), mem_type.get(), data.data()));
      VlenReclaim reclaim(mem_type.get(), space.get(), data.data());
      for (const char* s : data) result.emplace_back(s ? s : "");
    } else {
      // Fixed-length strings (as other tools may write them): read null-padded, trim.
      const std::size_t width = H5Tget_size(type.get());
      CONFLUX_CHECK(width > 0, "{}: attribute '{}' has a zero-sized string type", file_name_, name);
      Handle mem_type(H5Tcopy(H5T_C_S1), "copy the C string type");
      CONFLUX_H5_CHECK(H5Tset_size(mem_type.get(), width));
      CONFLUX_H5_CHECK(H5Tset_strpad(mem_type.get(), H5T_STR_NULLPAD));
      std::vector<char> data(n * width);
      CONFLUX_H5_CHECK(H5Aread(attr.get(), mem_type.get(), data.data()));
      for (std::size_t i = 0; i < n; ++i) {
        const char* s = data.data() + i * width;
        result.emplace_back(s, strnlen(s, width));
      }
    }
    return result;
  }

  std::string read_string(hid_t object, const std::string& object_name, const char* name) const {
    auto values = read_strings(object, object_name, name);
    CONFLUX_REQUIRE(values.size() == 1, "{}: attribute '{}' on {} is not a single string",
                    file_name_, name, object_name);
    return std::move(values.front());
  }

  Handle open_group(const char* name) const {
    const htri_t exists = H5Lexists(root_.get(), name, H5P_DEFAULT);
    CONFLUX_H5_CHECK(exists);
    CONFLUX_REQUIRE(exists > 0, "{}: missing group /{}", file_name_, name);
    const hid_t id = H5Gopen2(root_.get(), name, H5P_DEFAULT);
    CONFLUX_REQUIRE(id >= 0, "{}: /{} is not a group", file_name_, name);
    return Handle(id, "open group");
  }

  /// Opens a uint8 dataset of the given rank; returns it and its dimensions.
  std::pair<Handle, std::vector<hsize_t>> open_uint8_dataset(hid_t group, const std::string& path,
                                                             const char* name, int rank) const {
    const htri_t exists = H5Lexists(group, name, H5P_DEFAULT);
    CONFLUX_H5_CHECK(exists);
    CONFLUX_REQUIRE(exists > 0, "{}: missing dataset {}", file_name_, path);
    const hid_t id = H5Dopen2(group, name, H5P_DEFAULT);
    CONFLUX_REQUIRE(id >= 0, "{}: {} is not a dataset", file_name_, path);
    Handle dataset(id, "open dataset");
    Handle type(H5Dget_type(dataset.get()), "get dataset type");
    CONFLUX_REQUIRE(H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 1 &&
                        H5Tget_sign(type.get()) == H5T_SGN_NONE,
                    "{}: dataset {} is not of type uint8", file_name_, path);
    Handle space(H5Dget_space(dataset.get()), "get dataset dataspace");
    const int actual_rank = H5Sget_simple_extent_ndims(space.get());
    CONFLUX_H5_CHECK(actual_rank);
    CONFLUX_REQUIRE(actual_rank == rank, "{}: dataset {} has rank {}, expected {}", file_name_,
                    path, actual_rank, rank);
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    CONFLUX_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
    return {std::move(dataset), std::move(dims)};
  }

 private:
  std::string file_name_;
  Handle file_;
  Handle root_;
};

std::vector<SourceFile> read_sources(const Reader& r, hid_t object,
                                     const std::string& object_name) {
  const auto names = r.read_strings(object, object_name, "source_files");
  const auto digests = r.read_strings(object, object_name, "source_sha256");
  CONFLUX_REQUIRE(names.size() == digests.size(),
                  "{}: {} has {} source_files but {} source_sha256 entries", r.file_name(),
                  object_name, names.size(), digests.size());
  std::vector<SourceFile> sources;
  for (std::size_t i = 0; i < names.size(); ++i) sources.push_back({names[i], digests[i]});
  return sources;
}

/// Reads one split's images and labels into `ds`, whose name, shape and classes are set.
void read_split(const Reader& r, const char* split, const std::vector<SourceFile>& root_sources,
                Dataset& ds) {
  Handle group = r.open_group(split);
  const std::string group_name = fmt::format("/{}", split);
  const std::string images_name = group_name + "/images";
  const std::string labels_name = group_name + "/labels";
  auto [images, image_dims] = r.open_uint8_dataset(group.get(), images_name, "images", 4);
  const hsize_t n = image_dims[0];
  CONFLUX_REQUIRE(image_dims[1] == static_cast<hsize_t>(ds.shape.channels) &&
                      image_dims[2] == static_cast<hsize_t>(ds.shape.height) &&
                      image_dims[3] == static_cast<hsize_t>(ds.shape.width),
                  "{}: dataset {} has shape [{}, {}, {}, {}] but the root attributes say "
                  "channels={}, height={}, width={}",
                  r.file_name(), images_name, n, image_dims[1], image_dims[2], image_dims[3],
                  ds.shape.channels, ds.shape.height, ds.shape.width);
  CONFLUX_REQUIRE(n <= (std::uint64_t{1} << 40) / ds.shape.size(),
                  "{}: dataset {} claims {} images, more than memory could hold", r.file_name(),
                  images_name, n);
  auto [labels, label_dims] = r.open_uint8_dataset(group.get(), labels_name, "labels", 1);
  CONFLUX_REQUIRE(label_dims[0] == n, "{}: {} holds {} images but {} holds {} labels",
                  r.file_name(), images_name, n, labels_name, label_dims[0]);

  ds.images.resize(static_cast<std::size_t>(n) * ds.shape.size());
  ds.labels.resize(static_cast<std::size_t>(n));
  if (n > 0) {
    CONFLUX_H5_CHECK(
        H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.images.data()));
    CONFLUX_H5_CHECK(
        H5Dread(labels.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.labels.data()));
  }
  const auto bad = std::find_if(ds.labels.begin(), ds.labels.end(),
                                [&](std::uint8_t label) { return label >= ds.num_classes; });
  if (bad != ds.labels.end()) {
    CONFLUX_INPUT_ERROR("{}: {}[{}] = {} is out of range [0, {})", r.file_name(), labels_name,
                        bad - ds.labels.begin(), *bad, ds.num_classes);
  }

  const bool own_sources =
      r.has_attribute(group.get(), "source_files") || r.has_attribute(group.get(), "source_sha256");
  ds.sources = own_sources ? read_sources(r, group.get(), group_name) : root_sources;
}

}  // namespace

void write_hdf5_dataset(const std::filesystem::path& path, const DatasetSplits& splits) {
  const auto hdf5_lock = h5::lock_library();
  check_writable(splits);
  h5::silence_error_stack();
  const auto parent = path.parent_path();
  std::error_code ec;
  CONFLUX_REQUIRE(parent.empty() || std::filesystem::is_directory(parent, ec),
                  "{}: directory {} does not exist", path.string(), parent.string());
  publish_atomically(path, [&](const std::filesystem::path& temp) { write_file(temp, splits); });
}

DatasetSplits read_hdf5_dataset(const std::filesystem::path& path) {
  const auto hdf5_lock = h5::lock_library();
  h5::silence_error_stack();
  Reader r(path);
  const std::string root = "the root group";
  const std::int32_t version = r.read_int(r.root(), root, "format_version");
  CONFLUX_REQUIRE(version == kFormatVersion, "{}: format_version {} is not supported (expected {})",
                  r.file_name(), version, kFormatVersion);

  Dataset proto;
  proto.name = r.read_string(r.root(), root, "name");
  proto.shape.channels = r.read_int(r.root(), root, "channels");
  proto.shape.height = r.read_int(r.root(), root, "height");
  proto.shape.width = r.read_int(r.root(), root, "width");
  proto.num_classes = r.read_int(r.root(), root, "num_classes");
  for (const auto& [name, value, max] :
       {std::tuple{"channels", proto.shape.channels, kMaxChannels},
        std::tuple{"height", proto.shape.height, kMaxSide},
        std::tuple{"width", proto.shape.width, kMaxSide},
        std::tuple{"num_classes", proto.num_classes, kMaxClasses}}) {
    CONFLUX_REQUIRE(value >= 1 && value <= max,
                    "{}: root attribute {} = {} is out of range [1, {}]", r.file_name(), name,
                    value, max);
  }
  proto.class_names = r.read_strings(r.root(), root, "class_names");
  CONFLUX_REQUIRE(proto.class_names.size() == static_cast<std::size_t>(proto.num_classes),
                  "{}: root attribute class_names has {} entries but num_classes is {}",
                  r.file_name(), proto.class_names.size(), proto.num_classes);
  const auto root_sources = read_sources(r, r.root(), root);

  DatasetSplits splits{proto, proto};
  read_split(r, kSplitNames[0], root_sources, splits.train);
  read_split(r, kSplitNames[1], root_sources, splits.test);
  return splits;
}

}  // namespace conflux::data
