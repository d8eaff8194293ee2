#pragma once
/// @file image_folder.hpp
/// Test helper: a small image folder whose "images" are distinct byte strings (the sources do
/// not decode, so any bytes under a .jpg name will do).

#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "byte_files.hpp"

namespace conflux::testing {

/// The bytes written for split/class/file: distinct per file and of differing lengths.
inline std::string image_bytes(const std::string& split, const std::string& cls,
                               const std::string& file) {
  return fmt::format("{}|{}|{}|{}", split, cls, file, std::string(file.size() * 7, 'x'));
}

/// Writes root/<split>/{cat: b.jpg, a.PNG, notes.txt; dog: z.jpeg; emu: m.jpg, l.jpg} for each
/// split: 5 images in 3 classes, and one file that is no image.
inline void make_image_folder(const std::filesystem::path& root,
                              std::initializer_list<std::string> splits = {"train", "val"}) {
  for (const std::string& split : splits) {
    for (const auto& [cls, file] : {std::pair{"cat", "b.jpg"},
                                    {"cat", "a.PNG"},
                                    {"cat", "notes.txt"},
                                    {"dog", "z.jpeg"},
                                    {"emu", "m.jpg"},
                                    {"emu", "l.jpg"}}) {
      std::filesystem::create_directories(root / split / cls);
      write_plain(root / split / cls / file, image_bytes(split, cls, file));
    }
  }
}

}  // namespace conflux::testing
