// conflux-bench make-images --hdf5-arrays: the folder's images as HDF5 arrays of the pixels
// conflux's decoder produces (see image_arrays.hpp).

#include "image_arrays.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/data/io/image_codec.hpp"
#include "conflux/data/io/image_folder_source.hpp"
#include "conflux/hdf5/file.hpp"

namespace conflux::bench {

namespace {

constexpr int kSide = 32;
constexpr int kChannels = 3;
constexpr hsize_t kImagesPerChunk = 8;

struct SplitArrays {
  std::vector<std::uint8_t> images;  // HWC per sample
  std::vector<std::int64_t> labels;
};

// Every sample of root/split in the source's order, decoded and transposed CHW -> HWC.
SplitArrays decode_split(const std::filesystem::path& root, const std::string& split) {
  SplitArrays out;
  // A split made with --val 0 (or --train 0) has class folders but no images: write N = 0.
  bool any = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root / split)) {
    if (entry.is_regular_file()) {
      any = true;
      break;
    }
  }
  if (!any) return out;
  const data::ImageFolderSource source(root, split, kChannels);
  constexpr std::size_t plane = static_cast<std::size_t>(kSide) * kSide;
  out.images.resize(source.size() * plane * kChannels);
  out.labels.resize(source.size());
  std::vector<std::uint8_t> bytes;
  data::DecodedImage decoded;
  for (std::size_t i = 0; i < source.size(); ++i) {
    source.read(i, bytes);
    data::decode_image(bytes, data::DecodeOptions{kChannels, 0}, source.where(i), decoded);
    CONFLUX_REQUIRE(decoded.shape.channels == kChannels && decoded.shape.height == kSide &&
                        decoded.shape.width == kSide,
                    "make-images --hdf5-arrays: {} decodes to {}x{}x{}, not 3x32x32 (use "
                    "--size 0)",
                    source.where(i), decoded.shape.channels, decoded.shape.height,
                    decoded.shape.width);
    std::uint8_t* hwc = out.images.data() + i * plane * kChannels;
    for (std::size_t p = 0; p < plane; ++p) {
      for (std::size_t c = 0; c < kChannels; ++c)
        hwc[p * kChannels + c] = decoded.pixels[c * plane + p];
    }
    out.labels[i] = source.label(i);
  }
  return out;
}

void write_split(h5::File& file, const std::string& group, const SplitArrays& split) {
  file.create_group(group);
  const hsize_t n = split.labels.size();
  const h5::Dims dims = {n, kSide, kSide, kChannels};
  h5::DatasetOptions images;
  // A chunk may not be larger than a fixed-size dataset, so an empty one stays contiguous.
  if (n > 0) images.chunk = {std::min(n, kImagesPerChunk), kSide, kSide, kChannels};
  file.write(group + "/images", dims, split.images.data(), images);
  file.write(group + "/labels", h5::Dims{n}, split.labels.data());
}

}  // namespace

ArraysWritten write_hdf5_arrays(const std::filesystem::path& root,
                                const std::filesystem::path& file) {
  const SplitArrays train = decode_split(root, "train");
  const SplitArrays test = decode_split(root, "val");
  h5::File out = h5::File::create(file);
  write_split(out, "/train", train);
  write_split(out, "/test", test);
  out.close();  // surfaces write errors (disk full)
  return {train.labels.size(), test.labels.size()};
}

}  // namespace conflux::bench
