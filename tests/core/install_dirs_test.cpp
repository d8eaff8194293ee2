// Files shipped beside the executables are found relative to the executable, never to the
// working directory (core/install_dirs.hpp).
#include "conflux/core/install_dirs.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "../support/temp_dir.hpp"

namespace conflux {
namespace {

namespace fs = std::filesystem;

TEST(InstallDirs, CandidatesAreTheInstalledTreeThenTheSourceTree) {
  const auto c = shared_file_candidates("/opt/conflux/bin", "tables");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "/opt/conflux/share/conflux/tables");  // PREFIX/bin/conflux
  EXPECT_EQ(c[1], "/opt/share/conflux/tables");          // build/bin/conflux
  EXPECT_EQ(c[2], "/share/conflux/tables");              // build/<flavour>/bin/conflux
  EXPECT_TRUE(shared_file_candidates("", "tables").empty());
}

TEST(InstallDirs, ExecutableDirIsWhereThisTestBinaryIs) {
  const fs::path dir = executable_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_TRUE(dir.is_absolute());
  EXPECT_TRUE(fs::exists(dir / "conflux-unit-tests")) << dir;
}

TEST(InstallDirs, FindsTheSourceTreesShareFromTheBuildDirectory) {
  // The test binary lies in build/bin or build/<flavour>/bin: the tree's share/conflux.
  const fs::path found = find_shared_file("lambda-s3-transfer", "hint");
  EXPECT_TRUE(fs::exists(found / "f.csv")) << found;
  EXPECT_TRUE(found.is_absolute()) << "never relative to the working directory: " << found;
}

TEST(InstallDirs, MissingFileNamesEveryPlaceLookedAndTheHint) {
  const auto looked = shared_file_candidates(executable_dir(), "no-such-table");
  ASSERT_FALSE(looked.empty());
  testing::expect_input_error(
      [] { find_shared_file("no-such-table", "pass --s3-table DIR"); },
      {"no-such-table not found", looked.front().string(), "pass --s3-table DIR"});
}

}  // namespace
}  // namespace conflux
