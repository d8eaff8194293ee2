// Loading a CUDA library at run time (runtime_library.hpp).

#include "runtime_library.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>

#include "conflux/core/error.hpp"

namespace conflux::gpu {
namespace {

// The directory of the loaded CUDA runtime library, or empty.
std::string cudart_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudaGetDeviceCount), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

std::string last_dl_error() {
  const char* why = dlerror();
  return why != nullptr ? why : "not found";
}

}  // namespace

RuntimeLibrary::RuntimeLibrary(std::string what, std::string name, const char* hint)
    : what_(std::move(what)), name_(std::move(name)) {
  handle_ = dlopen(name_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ != nullptr) return;
  std::string why = last_dl_error();
  if (const std::string dir = cudart_directory(); !dir.empty()) {
    const std::string path = dir + "/" + name_;
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) return;
    why += fmt::format("; {}: {}", path, last_dl_error());
  }
  CONFLUX_RUNTIME_ERROR("{}: cannot load {} ({}); {}", what_, name_, why, hint);
}

void* RuntimeLibrary::address(const char* symbol) const {
  void* address = dlsym(handle_, symbol);
  if (address == nullptr) {
    CONFLUX_RUNTIME_ERROR("{}: {} has no {}: {}", what_, name_, symbol, last_dl_error());
  }
  return address;
}

}  // namespace conflux::gpu
