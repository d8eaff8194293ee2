#pragma once
/// @file image_arrays.hpp
/// `conflux-bench make-images --hdf5-arrays FILE`: the images just written into an image
/// folder, decoded by conflux's own decoder and stored as HDF5 arrays (data.dataset =
/// "hdf5-arrays", docs/datasets.md), so that training from the folder and from the file sees
/// the same pixels in the same sample order.

#include <cstddef>
#include <filesystem>

namespace conflux::bench {

/// What write_hdf5_arrays wrote.
struct ArraysWritten {
  std::size_t train = 0;
  std::size_t test = 0;
};

/// Reads `root`/train and `root`/val through data::ImageFolderSource (so the sample order is
/// the folder's: classes and files sorted bytewise), decodes every sample with
/// data::decode_image to 3 channels and writes `file` with /train/images and /test/images,
/// uint8 [N, 32, 32, 3] (HWC, chunked by 8 samples), and /train/labels and /test/labels, int64
/// [N]. Every image must be 32x32 (make-images --size 0). An empty split is written with N = 0.
ArraysWritten write_hdf5_arrays(const std::filesystem::path& root,
                                const std::filesystem::path& file);

}  // namespace conflux::bench
