#include "conflux/data/transform/transform_plugin.hpp"

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <string>

#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

// Plugins write their messages into a buffer we own, so its size bounds what they can say.
constexpr std::size_t kErrorSize = 512;
using ErrorBuffer = std::array<char, kErrorSize>;

// A plugin may leave the buffer unterminated or untouched; never read past it either way.
std::string message_of(ErrorBuffer& buffer) {
  buffer.back() = '\0';
  std::string message(buffer.data());
  return message.empty() ? std::string("(no message)") : message;
}

// dlerror() is null when the loader had nothing to report (e.g. a symbol whose value is null).
std::string last_dl_error() {
  const char* error = ::dlerror();
  return error != nullptr ? std::string(error) : std::string("unknown dynamic loader error");
}

}  // namespace

void TransformPlugin::LibraryCloser::operator()(void* handle) const noexcept {
  if (handle != nullptr) ::dlclose(handle);
}

std::shared_ptr<const TransformPlugin> TransformPlugin::load(const std::filesystem::path& library,
                                                             const std::string& args) {
  // make_shared cannot reach the private constructor.
  std::shared_ptr<TransformPlugin> plugin(new TransformPlugin());
  plugin->library_ = library;
  const std::string path = library.string();

  // RTLD_NOW reports unresolved symbols here, with the path, instead of mid-epoch; RTLD_LOCAL
  // keeps one plugin's symbols from satisfying another's.
  plugin->handle_.reset(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!plugin->handle_)
    CONFLUX_INPUT_ERROR("transform.plugin: cannot load '{}': {}", path, last_dl_error());

  ::dlerror();  // a stale error would be mistaken for this lookup's
  void* entry = ::dlsym(plugin->handle_.get(), CONFLUX_TRANSFORM_PLUGIN_ENTRY);
  if (entry == nullptr) {
    CONFLUX_INPUT_ERROR(
        "transform.plugin: '{}' has no entry point {} ({}); is it a conflux transform plugin "
        "built against plugin_abi.h?",
        path, CONFLUX_TRANSFORM_PLUGIN_ENTRY, last_dl_error());
  }
  using Entry = const conflux_transform_plugin* (*)();
  const conflux_transform_plugin* api = reinterpret_cast<Entry>(entry)();
  CONFLUX_REQUIRE(api != nullptr, "transform.plugin: {}() in '{}' returned NULL",
                  CONFLUX_TRANSFORM_PLUGIN_ENTRY, path);
  CONFLUX_REQUIRE(api->abi_version == CONFLUX_TRANSFORM_PLUGIN_ABI,
                  "transform.plugin: '{}' was built for plugin ABI version {}, but this conflux "
                  "supports version {}; rebuild it against this conflux's plugin_abi.h",
                  path, api->abi_version, CONFLUX_TRANSFORM_PLUGIN_ABI);
  CONFLUX_REQUIRE(api->create != nullptr && api->apply != nullptr,
                  "transform.plugin: '{}' exports a plugin with a NULL {} function", path,
                  api->create == nullptr ? "create" : "apply");
  plugin->api_ = api;
  plugin->name_ = api->name != nullptr && api->name[0] != '\0' ? std::string(api->name)
                                                               : library.stem().string();

  ErrorBuffer error{};
  plugin->state_ = api->create(args.c_str(), error.data(), error.size());
  if (plugin->state_ == nullptr) {
    CONFLUX_INPUT_ERROR("transform.plugin_args rejected by plugin '{}': {}", plugin->name_,
                        message_of(error));
  }
  return plugin;
}

TransformPlugin::~TransformPlugin() {
  // The state's destroy() lives in the library, so it must run before handle_ closes it.
  if (state_ != nullptr && api_ != nullptr && api_->destroy != nullptr) api_->destroy(state_);
}

void TransformPlugin::apply(float* chw, ImageShape shape, std::uint64_t random_key) const {
  conflux_image image{chw, shape.channels, shape.height, shape.width};
  ErrorBuffer error{};
  if (api_->apply(state_, &image, random_key, error.data(), error.size()) != 0) {
    CONFLUX_RUNTIME_ERROR("transform plugin '{}' ({}) failed: {}", name_, library_.string(),
                          message_of(error));
  }
}

}  // namespace conflux::data
