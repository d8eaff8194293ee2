// A program built against an installed conflux (tests/cli/install-tests.sh): once through
// pkg-config, once through CMake's find_package(conflux). It uses the headers, libconflux.a and
// its dependencies (MPI, toml++, fmt) and the installed S3 tables, and prints what the test
// checks.
#include <mpi.h>

#include <cstdio>
#include <span>
#include <string>

#include "conflux/config/config.hpp"
#include "conflux/core/sha256.hpp"
#include "conflux/plan/s3_transfer.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer S3_TABLE_DIR\n");
    return 2;
  }
  const std::string abc = "abc";
  std::printf("sha256(abc) = %s\n",
              conflux::data::sha256_hex(std::as_bytes(std::span(abc))).c_str());
  const auto table = conflux::plan::S3TransferTable::load(argv[1]);
  std::printf("s3 table: %zu object sizes, upload of 1 MB at 1024 MB: %.3f s\n",
              table.rows().size(), table.upload_seconds(1024, 1));
  const conflux::Config config = conflux::load_config_string(
      "[data]\ndataset = \"mnist\"\ndir = \"/datasets\"\n[[model.layers]]\ntype = \"flatten\"\n",
      "consumer.toml", conflux::ConfigSources{});
  std::printf("data.dir = %s\n", config.data().dir.c_str());
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(mpi, &length);
  std::printf("MPI library: %.*s\n", static_cast<int>(std::string(mpi).find_first_of("\n,")), mpi);
  return 0;
}
