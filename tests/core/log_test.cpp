// Log lines: rank and wall-clock time in the prefix; tee_to reaches every copy of a logger.
#include "conflux/core/log.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "conflux/core/elapsed.hpp"

namespace conflux {
namespace {

using testing::read_file;

TEST(Logger, TeeReachesCopiesAndStampsEveryLine) {
  testing::TempDir dir;
  const Logger log(3);
  const Logger copy = log;  // made before tee_to: still writes to the file
  log.tee_to(dir.path() / "logs" / "rank-3.log");
  ::testing::internal::CaptureStdout();
  copy.info("hello {}", 42);
  log.warn("careful");
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string file = read_file(dir.path() / "logs" / "rank-3.log");
  const std::regex info(R"(^\[conflux r3 \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] hello 42\n)");
  EXPECT_TRUE(std::regex_search(out, info)) << out;
  EXPECT_TRUE(std::regex_search(file, info)) << file;
  EXPECT_NE(file.find("] warning: careful\n"), std::string::npos) << file;
}

TEST(Logger, WithoutRankTheLineSaysConflux) {
  ::testing::internal::CaptureStdout();
  Logger().info("x");
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(std::regex_match(out, std::regex(R"(\[conflux \d{4}-[^\]]*\] x\n)"))) << out;
}

TEST(Logger, UnopenableFileIsAnError) {
  EXPECT_THROW(Logger(0).tee_to("/proc/conflux-no-such/rank-0.log"), Error);
}

TEST(HumanDuration, PicksTheUnitsAPersonReads) {
  EXPECT_EQ(human_duration(0), "0s");
  EXPECT_EQ(human_duration(44.6), "45s");
  EXPECT_EQ(human_duration(187), "3m07s");
  EXPECT_EQ(human_duration(7500), "2h05m");
  EXPECT_EQ(human_duration(-1), "?");
}

}  // namespace
}  // namespace conflux
