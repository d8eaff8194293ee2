#pragma once
/// @file hdf5_array_source.hpp
/// A split held as arrays in a user's HDF5 file (data.dataset = "hdf5-arrays";
/// docs/datasets.md): images [N, H, W, C] or [N, C, H, W], uint8 or float32 in [0, 1], and
/// integer labels [N]. Streamed: the labels are in memory, an image is read when asked.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conflux/data/io/sample_source.hpp"

namespace conflux::h5 {
class RowReader;
}

namespace conflux::data {

/// Where a split's arrays are and how to read them.
struct Hdf5ArrayOptions {
  std::filesystem::path file;
  std::string images = "/train/images";  ///< dataset of images
  std::string labels = "/train/labels";  ///< dataset of labels
  bool chw = false;                      ///< [N, C, H, W] rather than [N, H, W, C]
  int num_classes = 0;                   ///< labels must lie in [0, it); 0: the largest + 1
};

/// One split of HDF5 arrays: pixel samples, read(i) returns CHW uint8 of info().shape (a
/// float32 value x becomes round(255 x) clamped to [0, 255]; NaN becomes 0).
class Hdf5ArraySource final : public SampleSource {
 public:
  /// Opens the datasets and reads the labels. InputError naming the file and dataset for: a
  /// missing dataset, another type, rank or channel count (C must be 1 or 3), image and label
  /// counts that differ, no samples, a label out of range (and its index).
  explicit Hdf5ArraySource(const Hdf5ArrayOptions& options);
  ~Hdf5ArraySource() override;

  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return labels_.size(); }
  model::Label label(std::size_t i) const override;
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override;
  /// "<file> <images dataset>[i]".
  std::string where(std::size_t i) const override;
  std::size_t resident_bytes() const noexcept override;

 private:
  std::string file_;
  std::string images_path_;
  bool chw_ = false;
  bool float_ = false;
  SourceInfo info_;
  std::vector<model::Label> labels_;
  std::unique_ptr<h5::RowReader> images_;
};

}  // namespace conflux::data
