#include "conflux/core/install_dirs.hpp"

#include <fmt/format.h>

#include <system_error>

#include "conflux/core/error.hpp"

namespace conflux {

namespace fs = std::filesystem;

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

std::vector<fs::path> shared_file_candidates(const fs::path& exe_dir, std::string_view name) {
  std::vector<fs::path> out;
  if (exe_dir.empty()) return out;
  // PREFIX/bin, build/bin, build/<flavour>/bin: the prefix is 1, 2 or 3 levels up.
  fs::path prefix = exe_dir;
  for (int up = 1; up <= 3; ++up) {
    prefix = prefix.parent_path();
    out.push_back((prefix / "share" / "conflux" / name).lexically_normal());
    if (prefix == prefix.root_path()) break;
  }
  return out;
}

fs::path find_shared_file(std::string_view name, std::string_view hint) {
  const std::vector<fs::path> candidates = shared_file_candidates(executable_dir(), name);
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate;
  }
  std::vector<std::string> looked;
  for (const fs::path& candidate : candidates) looked.push_back(candidate.string());
  CONFLUX_INPUT_ERROR("{} not found beside the executable (looked in: {}); {}", name,
                      looked.empty() ? std::string("nowhere: /proc/self/exe is unreadable")
                                     : fmt::format("{}", fmt::join(looked, ", ")),
                      hint);
}

}  // namespace conflux
