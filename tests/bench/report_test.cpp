// conflux-bench's reports keep their work: output files are checked before measuring, and a
// scenario that fails late still writes what it measured.
#include "../../benchmarks/report.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "../support/temp_dir.hpp"

namespace conflux::bench {
namespace {

using testing::read_file;

TEST(BenchReport, AFailingScenarioWritesWhatItMeasured) {
  testing::TempDir dir;
  const auto json = dir.path() / "results" / "partial.json";
  try {
    Report report("demo", CommonOptions{.json = json.string()});
    Table& table = report.add_table(Table("sweep", "a sweep", {"ratio", "samples/s"}));
    table.add_row({0.5, 1234.0});
    throw std::runtime_error("a later part failed");
  } catch (const std::runtime_error&) {
  }
  const std::string text = read_file(json);
  EXPECT_NE(text.find("\"scenario\": \"demo\""), std::string::npos) << text;
  EXPECT_NE(text.find("1234"), std::string::npos) << text;
  EXPECT_NE(text.find("\"complete\": false"), std::string::npos) << text;
}

TEST(BenchReport, AFinishedScenarioWritesOnceAndIsNotMarkedIncomplete) {
  testing::TempDir dir;
  const auto json = dir.path() / "done.json";
  {
    Report report("demo", CommonOptions{.json = json.string()});
    report.set_summary("best", 2.0);
    report.write();
  }
  const std::string text = read_file(json);
  EXPECT_NE(text.find("\"best\": 2"), std::string::npos) << text;
  EXPECT_EQ(text.find("complete"), std::string::npos) << text;
}

TEST(BenchReport, OutputFilesAreCheckedBeforeMeasuring) {
  testing::TempDir dir;
  check_output_file((dir.path() / "new" / "deeper" / "out.json").string(), "--json");
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "new" / "deeper"));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "new" / "deeper"));  // no probe left
  check_output_file("", "--json");                                        // none asked for
  EXPECT_THROW(check_output_file(dir.path().string(), "--json"), InputError);
  if (::geteuid() != 0) {  // root writes anywhere
    std::filesystem::create_directory(dir.path() / "ro");
    ::chmod((dir.path() / "ro").c_str(), 0500);
    EXPECT_THROW(check_output_file((dir.path() / "ro" / "x.json").string(), "--json"), InputError);
  }
  EXPECT_THROW(check_output_file("/proc/conflux/x.json", "--timeline"), InputError);
}

}  // namespace
}  // namespace conflux::bench
