#pragma once
/// @file transform_plugin.hpp
/// Loads a user transform from a shared library (see plugin_abi.h) and applies it per sample.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "conflux/data/io/in_memory_split.hpp"
#include "conflux/data/transform/plugin_abi.h"

namespace conflux::data {

/// A loaded plugin: the dlopen handle and the plugin's state, released on destruction.
class TransformPlugin {
 public:
  /// dlopens `library`, looks up conflux_transform_plugin_v1, checks the ABI version and calls
  /// create(args). InputError naming the library when it cannot be loaded, lacks the entry
  /// point, has another ABI version or rejects `args`.
  static std::shared_ptr<const TransformPlugin> load(const std::filesystem::path& library,
                                                     const std::string& args);
  ~TransformPlugin();
  TransformPlugin(const TransformPlugin&) = delete;
  TransformPlugin& operator=(const TransformPlugin&) = delete;
  /// The plugin's name.
  const std::string& name() const noexcept { return name_; }
  /// The library it came from.
  const std::filesystem::path& library() const noexcept { return library_; }
  /// Applies the plugin to one float CHW image in place (thread-safe); RuntimeError with the
  /// plugin's message when it fails.
  void apply(float* chw, ImageShape shape, std::uint64_t random_key) const;

 private:
  struct LibraryCloser {
    void operator()(void* handle) const noexcept;
  };
  TransformPlugin() = default;
  std::unique_ptr<void, LibraryCloser> handle_;
  const conflux_transform_plugin* api_ = nullptr;
  void* state_ = nullptr;  // owned; released through api_->destroy
  std::string name_;
  std::filesystem::path library_;
};

}  // namespace conflux::data
