#include "version.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <hdf5.h>
#include <mpi.h>

#include <iostream>
#include <string_view>

#include "command.hpp"
#include "conflux/config/environment.hpp"

#if CONFLUX_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

// The Makefile passes the revision (from a stamp rewritten only when it changes) and the build.
#ifndef CONFLUX_REVISION
#define CONFLUX_REVISION "unknown"
#endif
#ifndef CONFLUX_BUILD_TYPE
#define CONFLUX_BUILD_TYPE "unknown"
#endif

namespace conflux::cli {

namespace {

// MPI_Get_library_version may be called before MPI_Init; its first line names the library.
std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  const std::string_view all(text, static_cast<std::size_t>(length));
  // Open MPI: "Open MPI v4.1.4, package: ..."; MPICH: "MPICH Version:\t4.0.2\n...": one line,
  // its runs of blanks made one space.
  std::string first;
  for (const char c : all.substr(0, all.find_first_of("\n,"))) {
    const bool blank = c == ' ' || c == '\t';
    if (!blank || (!first.empty() && first.back() != ' ')) first.push_back(blank ? ' ' : c);
  }
  if (!first.empty() && first.back() == ' ') first.pop_back();
  int major = 0;
  int minor = 0;
  MPI_Get_version(&major, &minor);
  return fmt::format("{} (MPI {}.{})", first, major, minor);
}

std::string hdf5_library() {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  H5get_libversion(&major, &minor, &release);
  int parallel = 0;
#ifdef H5_HAVE_PARALLEL
  parallel = 1;
#endif
  return fmt::format("{}.{}.{}{}", major, minor, release, parallel ? " (parallel)" : "");
}

std::string cuda_build() {
#if CONFLUX_HAVE_CUDA
  return fmt::format("built with CUDA runtime {}.{}, NCCL {}.{}.{} (docs/gpu.md)",
                     CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, NCCL_MAJOR, NCCL_MINOR,
                     NCCL_PATCH);
#else
  return "none (CPU-only build, CUDA=0)";
#endif
}

}  // namespace

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

std::string version_text() {
  return fmt::format(
      "conflux {}\n"
      "revision  {}\n"
      "build     {} (g++ {})\n"
      "MPI       {}\n"
      "HDF5      {}\n"
      "BLAS      {}; {} kernels, {}\n"
      "CUDA      {}\n",
      kVersion, CONFLUX_REVISION, CONFLUX_BUILD_TYPE, __VERSION__, mpi_library(), hdf5_library(),
      openblas_get_config(), blas_core_name(), current_blas_pin().describe(), cuda_build());
}

const Command& version_command() {
  static const Command command{
      .name = "version",
      .usage = "conflux version | --version",
      .summary = "release, revision, libraries",
      .help =
          "Prints the release, the git revision and build type conflux was built from, and the "
          "libraries it runs with (MPI, HDF5, BLAS and its kernels, CUDA).",
      .run =
          [](const Invocation& inv) {
            if (!operands(inv, 0, 0)) return 0;
            std::cout << version_text();
            return 0;
          },
      .aliases = {"--version"}};
  return command;
}

}  // namespace conflux::cli
