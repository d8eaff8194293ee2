#include "conflux/data/io/image_folder_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/data/io/file_bytes.hpp"

namespace conflux::data {
namespace fs = std::filesystem;
namespace {

// Names of the sub-folders of `dir`, sorted bytewise; with `files`, also counts other entries.
std::vector<std::string> sub_folders(const fs::path& dir, std::size_t* files = nullptr) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) {
      names.push_back(it->path().filename().string());
    } else if (files != nullptr && is_image_file_name(it->path().filename().string())) {
      ++*files;
    }
  }
  CONFLUX_REQUIRE(!ec, "{}: cannot list it: {}", dir.string(), ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// The image files of one class folder with their sizes, sorted by name; counts the others.
std::vector<std::pair<std::string, std::uint64_t>> class_files(const fs::path& dir,
                                                               std::size_t& ignored) {
  std::vector<std::pair<std::string, std::uint64_t>> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!is_image_file_name(name) || !it->is_regular_file(ec)) {
      ++ignored;
      continue;
    }
    const std::uint64_t size = it->file_size(ec);
    CONFLUX_REQUIRE(!ec, "{}: cannot read its size: {}", it->path().string(), ec.message());
    files.emplace_back(std::move(name), size);
  }
  CONFLUX_REQUIRE(!ec, "{}: cannot list it: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

void hash_text(Sha256& hash, std::string_view text) {
  hash.update(std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace

bool is_image_file_name(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

ImageFolderSource::ImageFolderSource(const fs::path& root, const std::string& split, int channels)
    : split_dir_(root / split) {
  std::error_code ec;
  CONFLUX_REQUIRE(fs::is_directory(root, ec), "{}: no such directory (the image folder's root)",
                  root.string());
  CONFLUX_REQUIRE(fs::is_directory(split_dir_, ec),
                  "{}: no split folder '{}' (the split folders there: {})", root.string(), split,
                  fmt::join(sub_folders(root), ", "));
  std::size_t flat_images = 0;
  const std::vector<std::string> classes = sub_folders(split_dir_, &flat_images);
  CONFLUX_REQUIRE(!classes.empty(),
                  "{}: no class folders (expected {}/<class>/<image>.jpg|jpeg|png){}",
                  split_dir_.string(), split,
                  flat_images == 0 ? std::string()
                                   : fmt::format("; it holds {} images directly: arrange them in "
                                                 "class folders (ImageNet's val set ships flat)",
                                                 flat_images));
  info_.name = "image-folder";
  info_.format = SampleFormat::kEncoded;
  info_.shape = {channels, 0, 0};
  info_.class_names = classes;
  info_.num_classes = static_cast<int>(classes.size());
  list_classes(classes);
}

void ImageFolderSource::list_classes(const std::vector<std::string>& classes) {
  Sha256 listing;
  std::string empty_class;
  for (const std::string& name : classes) {
    class_begin_.push_back(files_.size());
    const auto files = class_files(split_dir_ / name, ignored_);
    if (files.empty() && empty_class.empty()) empty_class = name;
    for (const auto& [file, bytes] : files) {
      files_.push_back(file);
      // Paths and sizes, not times: copies of one dataset must agree (docs/datasets.md).
      hash_text(listing, fmt::format("{}/{}\t{}\n", name, file, bytes));
    }
  }
  class_begin_.push_back(files_.size());
  CONFLUX_REQUIRE(files_.size() > 0,
                  "{}: no images (.jpg, .jpeg, .png) in any of its {} class folders ({} other "
                  "files ignored)",
                  split_dir_.string(), classes.size(), ignored_);
  CONFLUX_REQUIRE(empty_class.empty(),
                  "{}: class folder without images (.jpg, .jpeg, .png); it would shift every "
                  "later class index: remove it or add its images",
                  (split_dir_ / empty_class).string());
  files_.shrink_to_fit();
  class_begin_.shrink_to_fit();
  info_.sources.push_back(
      {fmt::format("{} listing ({} files)", split_dir_.filename().string(), files_.size()),
       listing.finish_hex()});
}

model::Label ImageFolderSource::label(std::size_t i) const {
  CONFLUX_CHECK(i < size(), "{}: sample {} of {}", split_dir_.string(), i, size());
  const auto next = std::upper_bound(class_begin_.begin(), class_begin_.end(), i);
  return static_cast<model::Label>(next - class_begin_.begin() - 1);
}

std::string ImageFolderSource::relative_name(std::size_t i) const {
  return fmt::format("{}/{}", info_.class_names[static_cast<std::size_t>(label(i))], files_[i]);
}

std::string ImageFolderSource::where(std::size_t i) const {
  return (split_dir_ / relative_name(i)).string();
}

void ImageFolderSource::read(std::size_t i, std::vector<std::uint8_t>& out) const {
  read_whole_file(split_dir_ / relative_name(i), out);
}

std::size_t ImageFolderSource::resident_bytes() const noexcept {
  std::size_t bytes = files_.resident_bytes() + class_begin_.capacity() * sizeof(std::size_t);
  for (const std::string& name : info_.class_names) bytes += sizeof(std::string) + name.capacity();
  return bytes;
}

}  // namespace conflux::data
