#pragma once
/// @file image_folder_source.hpp
/// A split of an image folder, root/<split>/<class>/<file>.{jpg,jpeg,png} (torchvision's
/// ImageFolder layout; docs/datasets.md), streamed: the source keeps the file names and the
/// class boundaries, and read() reads the file.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "conflux/data/io/name_table.hpp"
#include "conflux/data/io/sample_source.hpp"

namespace conflux::data {

/// One split folder: classes are its sub-folders sorted bytewise, samples their image files
/// sorted bytewise, sample i the i-th file in (class, file) order. Encoded samples.
class ImageFolderSource final : public SampleSource {
 public:
  /// Lists root/split. InputError naming the path for: a missing root or split (listing the
  /// split folders that exist), no class folders, no images at all, a class folder without
  /// images (it would shift every later class index). `channels`: what decoding converts to.
  ImageFolderSource(const std::filesystem::path& root, const std::string& split, int channels);

  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return files_.size(); }
  model::Label label(std::size_t i) const override;
  /// Reads the whole file.
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override;
  /// The file's path.
  std::string where(std::size_t i) const override;
  std::size_t resident_bytes() const noexcept override;

  /// "<class>/<file>": sample i's path relative to the split folder (what a pack records).
  std::string relative_name(std::size_t i) const;
  /// Files in class folders that are not samples (other extensions, sub-folders): ignored.
  std::size_t ignored_files() const noexcept { return ignored_; }

 private:
  void list_classes(const std::vector<std::string>& classes);

  std::filesystem::path split_dir_;
  SourceInfo info_;
  NameTable files_;                       // file names inside their class folder
  std::vector<std::size_t> class_begin_;  // first sample of each class, then size()
  std::size_t ignored_ = 0;
};

/// True when `name` ends in .jpg, .jpeg or .png, in any case.
bool is_image_file_name(const std::string& name);

}  // namespace conflux::data
