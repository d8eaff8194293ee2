// The data directory conflux and conflux-bench take from the environment
// (config/environment.hpp, docs/design.md "Data directory"): never the working directory.
#include "conflux/config/environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "../support/temp_dir.hpp"
#include "conflux/data/io/catalog.hpp"

namespace conflux {
namespace {

// Sets (or with nullopt unsets) one environment variable for the test's lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Environment, ConfluxDataWins) {
  const ScopedEnv data("CONFLUX_DATA", "/datasets");
  const ScopedEnv xdg("XDG_DATA_HOME", "/xdg");
  EXPECT_EQ(environment_data_dir(), "/datasets");
  EXPECT_EQ(environment_sources({"a=1"}, "now").env_data_dir, "/datasets");
}

TEST(Environment, PerUserDefaultFollowsXdgThenHome) {
  const ScopedEnv data("CONFLUX_DATA", "");  // empty counts as unset
  const ScopedEnv home("HOME", "/home/ada");
  {
    const ScopedEnv xdg("XDG_DATA_HOME", "/xdg/share");
    EXPECT_EQ(environment_data_dir(), "/xdg/share/conflux/data");
  }
  {
    const ScopedEnv xdg("XDG_DATA_HOME", std::nullopt);
    EXPECT_EQ(environment_data_dir(), "/home/ada/.local/share/conflux/data");
  }
  {
    // A relative $XDG_DATA_HOME is invalid (XDG base directory specification): ignored.
    const ScopedEnv xdg("XDG_DATA_HOME", "relative/share");
    EXPECT_EQ(environment_data_dir(), "/home/ada/.local/share/conflux/data");
  }
}

TEST(Environment, NothingUsableGivesNoDirectoryAndAClearError) {
  const ScopedEnv data("CONFLUX_DATA", std::nullopt);
  const ScopedEnv xdg("XDG_DATA_HOME", std::nullopt);
  const ScopedEnv home("HOME", std::nullopt);
  EXPECT_EQ(environment_data_dir(), "");
  const Config c =
      load_config_string("[data]\ndataset = \"mnist\"\n[[model.layers]]\ntype = \"flatten\"\n",
                         "t.toml", environment_sources({}, "now"));
  EXPECT_TRUE(c.data().dir.empty()) << "must not fall back to the working directory";
  testing::expect_input_error([&] { data::load_dataset("mnist", c.data().dir); },
                              {"no data directory", "data.dir", "CONFLUX_DATA", "conflux/data"});
}

TEST(Environment, MissingDatasetSaysWhereItLookedAndHowToPointElsewhere) {
  const testing::TempDir dir;
  const ScopedEnv data("CONFLUX_DATA", dir.path().string());
  const Config c =
      load_config_string("[data]\ndataset = \"mnist\"\n[[model.layers]]\ntype = \"flatten\"\n",
                         "t.toml", environment_sources({}, "now"));
  EXPECT_EQ(c.data().dir, dir.path());
  testing::expect_input_error([&] { data::load_dataset("mnist", c.data().dir); },
                              {(dir.path() / "mnist").string(), "not found", "--set data.dir=DIR",
                               "CONFLUX_DATA", "XDG_DATA_HOME"});
}

}  // namespace
}  // namespace conflux
