#include "conflux/data/io/hdf5_splits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::data {
namespace {

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

void write_sources(h5::File& file, const std::string& object,
                   const std::vector<SourceFile>& sources) {
  std::vector<std::string> names, digests;
  for (const auto& s : sources) {
    names.push_back(s.name);
    digests.push_back(s.sha256);
  }
  file.write_strings_attribute(object, "source_files", names);
  file.write_strings_attribute(object, "source_sha256", digests);
}

void write_split(h5::File& file, const char* split, const InMemorySplit& ds) {
  const std::string group = fmt::format("/{}", split);
  file.create_group(group);
  const hsize_t n = ds.size();
  const h5::Dims dims = {n, static_cast<hsize_t>(ds.shape.channels),
                         static_cast<hsize_t>(ds.shape.height),
                         static_cast<hsize_t>(ds.shape.width)};
  h5::DatasetOptions images;
  if (n > 0) {  // a chunk may not be larger than a fixed-size dataset, so empty stays contiguous
    images.chunk = {std::min(n, kImagesPerChunk), dims[1], dims[2], dims[3]};
    images.deflate = kDeflateLevel;
  }
  file.write(group + "/images", dims, ds.images.data(), images);
  // Format version 1 stores labels as uint8 (at most kMaxClasses classes).
  const std::vector<std::uint8_t> label_bytes(ds.labels.begin(), ds.labels.end());
  file.write(group + "/labels", h5::Dims{n}, label_bytes.data());
  // Per-split provenance, so that reading restores each split's sources exactly; the root
  // attributes list all of them.
  write_sources(file, group, ds.sources);
}

/// The writer's precondition: both splits describe the same dataset consistently.
void check_writable(const InMemorySplits& splits) {
  const InMemorySplit& train = splits.train;
  CONFLUX_CHECK(train.shape.channels > 0 && train.shape.height > 0 && train.shape.width > 0,
                "dataset {}: image shape {}x{}x{} is not positive", train.name,
                train.shape.channels, train.shape.height, train.shape.width);
  CONFLUX_CHECK(train.num_classes > 0 && train.num_classes <= kMaxClasses &&
                    train.class_names.size() == static_cast<std::size_t>(train.num_classes),
                "dataset {}: {} classes with {} class names", train.name, train.num_classes,
                train.class_names.size());
  for (const InMemorySplit* ds : {&splits.train, &splits.test}) {
    CONFLUX_CHECK(ds->name == train.name && ds->shape == train.shape &&
                      ds->num_classes == train.num_classes && ds->class_names == train.class_names,
                  "dataset {}: train and test splits differ in name, shape or classes", train.name);
    CONFLUX_CHECK(ds->images.size() == ds->size() * ds->shape.size(),
                  "dataset {}: {} image bytes for {} labels of {} bytes each", train.name,
                  ds->images.size(), ds->size(), ds->shape.size());
  }
}

void write_file(const std::filesystem::path& path, const InMemorySplits& splits) {
  constexpr auto kVariable = h5::StringStorage::kVariableLength;
  h5::File file = h5::File::create(path);
  const InMemorySplit& ds = splits.train;
  file.write_attribute<std::int32_t>("/", "format_version", kFormatVersion);
  file.write_string_attribute("/", "name", ds.name, kVariable);
  file.write_attribute<std::int32_t>("/", "channels", ds.shape.channels);
  file.write_attribute<std::int32_t>("/", "height", ds.shape.height);
  file.write_attribute<std::int32_t>("/", "width", ds.shape.width);
  file.write_attribute<std::int32_t>("/", "num_classes", ds.num_classes);
  file.write_strings_attribute("/", "class_names", ds.class_names);
  std::vector<SourceFile> all_sources = splits.train.sources;
  for (const auto& s : splits.test.sources) {
    if (std::find(all_sources.begin(), all_sources.end(), s) == all_sources.end()) {
      all_sources.push_back(s);
    }
  }
  write_sources(file, "/", all_sources);
  write_split(file, kSplitNames[0], splits.train);
  write_split(file, kSplitNames[1], splits.test);
  file.close();  // surfaces write errors (disk full)
}

// ---------------------------------------------------------------------------------------------
// Reading

std::vector<SourceFile> read_sources(const h5::File& file, const std::string& object) {
  const auto names = file.read_strings_attribute(object, "source_files");
  const auto digests = file.read_strings_attribute(object, "source_sha256");
  CONFLUX_REQUIRE(names.size() == digests.size(),
                  "{}: {} has {} source_files but {} source_sha256 entries", file.label(),
                  object == "/" ? "the root group" : object, names.size(), digests.size());
  std::vector<SourceFile> sources;
  for (std::size_t i = 0; i < names.size(); ++i) sources.push_back({names[i], digests[i]});
  return sources;
}

/// The root attributes every split shares: name, image shape and classes, within the limits.
InMemorySplit read_description(const h5::File& file) {
  InMemorySplit proto;
  proto.name = file.read_string_attribute("/", "name");
  proto.shape.channels = file.read_attribute<std::int32_t>("/", "channels");
  proto.shape.height = file.read_attribute<std::int32_t>("/", "height");
  proto.shape.width = file.read_attribute<std::int32_t>("/", "width");
  proto.num_classes = file.read_attribute<std::int32_t>("/", "num_classes");
  for (const auto& [name, value, max] :
       {std::tuple{"channels", proto.shape.channels, kMaxChannels},
        std::tuple{"height", proto.shape.height, kMaxSide},
        std::tuple{"width", proto.shape.width, kMaxSide},
        std::tuple{"num_classes", proto.num_classes, kMaxClasses}}) {
    CONFLUX_REQUIRE(value >= 1 && value <= max,
                    "{}: root attribute {} = {} is out of range [1, {}]", file.label(), name, value,
                    max);
  }
  proto.class_names = file.read_strings_attribute("/", "class_names");
  CONFLUX_REQUIRE(proto.class_names.size() == static_cast<std::size_t>(proto.num_classes),
                  "{}: root attribute class_names has {} entries but num_classes is {}",
                  file.label(), proto.class_names.size(), proto.num_classes);
  return proto;
}

/// Opens one split's images and labels and checks their shapes against `ds` (whose name,
/// shape and classes are set).
std::pair<h5::Dataset, h5::Dataset> open_split(const h5::File& file, const std::string& group,
                                               const InMemorySplit& ds) {
  file.require_group(group);
  h5::Dataset images = file.open_dataset<std::uint8_t>(group + "/images");
  images.require_rank(4);
  const h5::Dims& dims = images.dims();
  const hsize_t n = dims[0];
  CONFLUX_REQUIRE(dims[1] == static_cast<hsize_t>(ds.shape.channels) &&
                      dims[2] == static_cast<hsize_t>(ds.shape.height) &&
                      dims[3] == static_cast<hsize_t>(ds.shape.width),
                  "{}: dataset {} has shape [{}, {}, {}, {}] but the root attributes say "
                  "channels={}, height={}, width={}",
                  file.label(), images.path(), n, dims[1], dims[2], dims[3], ds.shape.channels,
                  ds.shape.height, ds.shape.width);
  CONFLUX_REQUIRE(n <= (std::uint64_t{1} << 40) / ds.shape.size(),
                  "{}: dataset {} claims {} images, more than memory could hold", file.label(),
                  images.path(), n);
  h5::Dataset labels = file.open_dataset<model::Label>(group + "/labels", {.convert = true});
  labels.require_rank(1);
  CONFLUX_REQUIRE(labels.dims()[0] == n, "{}: {} holds {} images but {} holds {} labels",
                  file.label(), images.path(), n, labels.path(), labels.dims()[0]);
  return {std::move(images), std::move(labels)};
}

/// Reads one split's images, labels and sources into `ds`, whose name, shape and classes are
/// set; a split without its own sources has the root's.
void read_split(const h5::File& file, const char* split,
                const std::vector<SourceFile>& root_sources, InMemorySplit& ds) {
  const std::string group = fmt::format("/{}", split);
  const auto [images, labels] = open_split(file, group, ds);
  ds.images.resize(images.element_count());
  ds.labels.resize(labels.element_count());
  images.read_into(std::span(ds.images));
  labels.read_into(std::span(ds.labels));
  const auto bad = std::find_if(ds.labels.begin(), ds.labels.end(), [&](model::Label label) {
    return label < 0 || label >= ds.num_classes;
  });
  if (bad != ds.labels.end()) {
    CONFLUX_INPUT_ERROR("{}: {}[{}] = {} is out of range [0, {})", file.label(), labels.path(),
                        bad - ds.labels.begin(), *bad, ds.num_classes);
  }
  const bool own_sources =
      file.has_attribute(group, "source_files") || file.has_attribute(group, "source_sha256");
  ds.sources = own_sources ? read_sources(file, group) : root_sources;
}

}  // namespace

void write_hdf5_splits(const std::filesystem::path& path, const InMemorySplits& splits) {
  check_writable(splits);
  const auto parent = path.parent_path();
  std::error_code ec;
  CONFLUX_REQUIRE(parent.empty() || std::filesystem::is_directory(parent, ec),
                  "{}: directory {} does not exist", path.string(), parent.string());
  publish_atomically(path, [&](const std::filesystem::path& temp) { write_file(temp, splits); });
}

namespace {

InMemorySplits read_checked(const h5::File& file) {
  // Another conflux format (a checkpoint, a model file) names itself in a `format` attribute.
  CONFLUX_REQUIRE(!file.has_attribute("/", "format"),
                  "{}: is a {} file, not a conflux HDF5 dataset (expected a file written by "
                  "`conflux data convert`)",
                  file.label(), file.read_string_attribute("/", "format"));
  CONFLUX_REQUIRE(file.has_attribute("/", "format_version"),
                  "{}: not a conflux HDF5 dataset: no format_version attribute at / (expected a "
                  "file written by `conflux data convert`)",
                  file.label());
  const auto version = file.read_attribute<std::int32_t>("/", "format_version");
  CONFLUX_REQUIRE(version == kFormatVersion, "{}: format_version {} is not supported (expected {})",
                  file.label(), version, kFormatVersion);
  const InMemorySplit description = read_description(file);
  const auto root_sources = read_sources(file, "/");
  InMemorySplits splits{description, description};
  read_split(file, kSplitNames[0], root_sources, splits.train);
  read_split(file, kSplitNames[1], root_sources, splits.test);
  return splits;
}

}  // namespace

InMemorySplits read_hdf5_splits(const std::filesystem::path& path) {
  try {
    return read_checked(h5::File::open(path));
  } catch (const RuntimeError& e) {
    // The HDF5 library failing on a data file means the file is damaged: bad input (exit 2).
    CONFLUX_INPUT_ERROR("{}: damaged HDF5 dataset, cannot be read: {}", path.string(), e.what());
  }
}

}  // namespace conflux::data
