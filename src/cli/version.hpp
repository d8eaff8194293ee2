#pragma once
/// @file version.hpp
/// What `conflux --version` prints: the release, the git revision and build type it was built
/// from, and the libraries it runs with (MPI, HDF5, BLAS, CUDA), which is what a bug report on
/// a cluster needs first.

#include <string>

namespace conflux::cli {

/// The release number.
inline constexpr const char* kVersion = "0.1.0";

/// The core whose kernels OpenBLAS runs (openblas_get_corename()), e.g. "Haswell".
std::string blas_core_name();

/// Several lines: release, revision, build type, compiler, MPI library, HDF5, BLAS, CUDA.
std::string version_text();

}  // namespace conflux::cli
