#include "conflux/core/atomic_file.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "../support/temp_dir.hpp"

namespace conflux {
namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AtomicFile, PublishesCompleteContentsAndLeavesNoTemporary) {
  const testing::TempDir dir;
  const auto path = dir.path() / "summary.json";
  publish_text_file(path, "first");
  publish_text_file(path, "second");
  EXPECT_EQ(read_all(path), "second");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(AtomicFile, FailedWriteKeepsThePreviousFileAndRemovesTheTemporary) {
  const testing::TempDir dir;
  const auto path = dir.path() / "model.h5";
  publish_text_file(path, "good");
  EXPECT_THROW(publish_atomically(path,
                                  [](const std::filesystem::path& temp) {
                                    std::ofstream(temp) << "half";
                                    throw std::runtime_error("disk full");
                                  }),
               std::runtime_error);
  EXPECT_EQ(read_all(path), "good");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(AtomicFile, WriterThatCreatesNothingIsAnError) {
  const testing::TempDir dir;
  EXPECT_THROW(publish_atomically(dir.path() / "x", [](const std::filesystem::path&) {}),
               RuntimeError);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x"));
}

}  // namespace
}  // namespace conflux
