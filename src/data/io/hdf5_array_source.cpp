#include "conflux/data/io/hdf5_array_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/hdf5/file.hpp"
#include "conflux/hdf5/rows.hpp"

namespace conflux::data {
namespace {

// Rows of a few MB are read one at a time: a cache that holds a few chunks of images keeps a
// chunk of several samples from being decompressed once per sample (docs/datasets.md).
constexpr std::size_t kChunkCacheBytes = std::size_t{64} << 20;

// The images dataset as uint8 (exactly) or as float32 (any float type, converted).
h5::Dataset open_images(const h5::File& file, const std::string& path, bool& is_float) {
  CONFLUX_REQUIRE(file.exists(path), "{}: missing dataset {} (data.hdf5_*_images)", file.label(),
                  path);
  try {
    is_float = false;
    return file.open_dataset<std::uint8_t>(path);
  } catch (const InputError&) {
  }
  try {
    is_float = true;
    return file.open_dataset<float>(path, {.convert = true});
  } catch (const InputError&) {
  }
  CONFLUX_INPUT_ERROR(
      "{}: dataset {} is neither uint8 nor float (images must be uint8, or "
      "float32 in [0, 1])",
      file.label(), path);
}

// The labels, checked against `num_classes` (0: any non-negative label; then it becomes the
// largest + 1).
std::vector<model::Label> read_labels(const h5::File& file, const Hdf5ArrayOptions& options,
                                      std::size_t n, int& num_classes) {
  // Read as int64 whatever integer type is stored, so no value is clamped unseen.
  const h5::Dataset dataset = file.open_dataset<std::int64_t>(options.labels, {.convert = true});
  dataset.require_rank(1);
  CONFLUX_REQUIRE(dataset.dims()[0] == n, "{}: {} holds {} labels but {} holds {} images",
                  file.label(), options.labels, dataset.dims()[0], options.images, n);
  const std::vector<std::int64_t> values = dataset.read<std::int64_t>();
  const std::int64_t limit = options.num_classes > 0 ? options.num_classes : (1 << 24);
  std::vector<model::Label> labels(n);
  std::int64_t largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CONFLUX_REQUIRE(values[i] >= 0 &&
                            values[i]<limit, "{}: {}[{}] = {} is outside [0, {}){}", file.label(),
                                      options.labels, i, values[i], limit, options.num_classes> 0
                        ? " (data.num_classes)"
                        : " (labels must be >= 0)");
    labels[i] = static_cast<model::Label>(values[i]);
    largest = std::max(largest, values[i]);
  }
  num_classes = options.num_classes > 0 ? options.num_classes : static_cast<int>(largest + 1);
  return labels;
}

// Identity without hashing every pixel (a whole ImageNet is too large to hash on every start):
// the file's size, the images' shape and type, and the labels themselves.
SourceFile identity(const std::string& file, std::uint64_t file_size, const std::string& images,
                    const h5::Dims& dims, bool is_float, const std::vector<model::Label>& labels) {
  Sha256 hash;
  const std::string head = fmt::format("{} bytes; {} {} {}\n", file_size, images,
                                       h5::dims_string(dims), is_float ? "float32" : "uint8");
  hash.update(std::as_bytes(std::span(head.data(), head.size())));
  hash.update(std::as_bytes(std::span(labels)));
  return {fmt::format("{} {} (size, shape, labels)",
                      std::filesystem::path(file).filename().string(), images),
          hash.finish_hex()};
}

}  // namespace

Hdf5ArraySource::Hdf5ArraySource(const Hdf5ArrayOptions& options)
    : file_(options.file.string()), images_path_(options.images), chw_(options.chw) {
  const h5::File file =
      h5::File::open(options.file, {.label = file_, .chunk_cache_bytes = kChunkCacheBytes});
  h5::Dataset images = open_images(file, options.images, float_);
  images.require_rank(4);
  const h5::Dims& d = images.dims();
  const hsize_t c = chw_ ? d[1] : d[3], h = chw_ ? d[2] : d[1], w = chw_ ? d[3] : d[2];
  CONFLUX_REQUIRE(c == 1 || c == 3,
                  "{}: {} has shape {}: {} channels as data.hdf5_layout = \"{}\" reads it; "
                  "expected 1 or 3",
                  file_, options.images, h5::dims_string(d), c, chw_ ? "chw" : "hwc");
  CONFLUX_REQUIRE(d[0] > 0 && h > 0 && w > 0 && h <= 65535 && w <= 65535,
                  "{}: {} has shape {}: no images, or a side of 0 or above 65535", file_,
                  options.images, h5::dims_string(d));
  info_.name = "hdf5-arrays";
  info_.format = SampleFormat::kPixels;
  info_.shape = {static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)};
  labels_ = read_labels(file, options, d[0], info_.num_classes);
  for (int k = 0; k < info_.num_classes; ++k) info_.class_names.push_back(std::to_string(k));
  info_.sources.push_back(identity(file_, file.size_at_open(), options.images, d, float_, labels_));
  images_ = std::make_unique<h5::RowReader>(std::move(images));
}

Hdf5ArraySource::~Hdf5ArraySource() = default;

model::Label Hdf5ArraySource::label(std::size_t i) const {
  CONFLUX_CHECK(i < size(), "{}: sample {} of {}", file_, i, size());
  return labels_[i];
}

void Hdf5ArraySource::read(std::size_t i, std::vector<std::uint8_t>& out) const {
  CONFLUX_CHECK(i < size(), "{}: sample {} of {}", file_, i, size());
  const std::size_t n = info_.shape.size();
  std::vector<std::uint8_t> raw;
  if (float_) {
    std::vector<float> values(n);
    images_->read_rows<float>(i, 1, values);
    raw.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      const float x = values[k];  // NaN fails both comparisons: 0
      raw[k] = x > 0.0f ? static_cast<std::uint8_t>(std::lround(std::min(x, 1.0f) * 255.0f)) : 0;
    }
  } else {
    raw.resize(n);
    images_->read_rows<std::uint8_t>(i, 1, raw);
  }
  if (chw_) {
    out = std::move(raw);
    return;
  }
  // HWC to CHW.
  const std::size_t c = static_cast<std::size_t>(info_.shape.channels);
  const std::size_t plane = n / c;
  out.resize(n);
  for (std::size_t p = 0; p < plane; ++p) {
    for (std::size_t k = 0; k < c; ++k) out[k * plane + p] = raw[p * c + k];
  }
}

std::string Hdf5ArraySource::where(std::size_t i) const {
  return fmt::format("{} {}[{}]", file_, images_path_, i);
}

std::size_t Hdf5ArraySource::resident_bytes() const noexcept {
  return labels_.capacity() * sizeof(model::Label) + kChunkCacheBytes;
}

}  // namespace conflux::data
