#pragma once
/// @file install_dirs.hpp
/// Files conflux ships beside its executables (the Lambda-S3 transfer tables), found relative
/// to the running executable, never to the working directory: `PREFIX/bin/conflux` reads
/// `PREFIX/share/conflux/<name>` (what `make install` writes), and a binary in the source
/// tree's `build/bin` or `build/<flavour>/bin` reads the tree's own `share/conflux/<name>`.

#include <filesystem>
#include <string_view>
#include <vector>

namespace conflux {

/// The directory of the running executable (/proc/self/exe); empty when it cannot be read.
std::filesystem::path executable_dir();

/// Where `name` under share/conflux may be for an executable in `exe_dir`, in search order:
/// `exe_dir/../share/conflux/<name>`, then one and two levels further up.
std::vector<std::filesystem::path> shared_file_candidates(const std::filesystem::path& exe_dir,
                                                          std::string_view name);

/// The first existing shared_file_candidates() of the running executable. InputError naming
/// every place looked at and `hint` (how to give the path explicitly) when there is none.
std::filesystem::path find_shared_file(std::string_view name, std::string_view hint);

}  // namespace conflux
