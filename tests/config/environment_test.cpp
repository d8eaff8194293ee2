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

// --- which OpenBLAS kernels conflux runs (docs/design.md invariant 8) ----------------------

TEST(BlasPin, PortableRestartsOnceWithHaswellOnAnAvx2Cpu) {
  for (const std::string mode : {"portable"}) {
    const BlasPin first = plan_blas_pin({mode, "", true});
    EXPECT_EQ(first.state, BlasPin::State::kPinned);
    EXPECT_TRUE(first.restart) << "OpenBLAS reads OPENBLAS_CORETYPE only while it loads";
    EXPECT_EQ(first.note, "") << "portable results need no word";
    // The restarted process finds the pinned value and must not restart again.
    const BlasPin again = plan_blas_pin({mode, kPinnedBlasCore, true});
    EXPECT_EQ(again.state, BlasPin::State::kPinned);
    EXPECT_FALSE(again.restart);
    EXPECT_NE(again.describe().find("pinned to Haswell"), std::string::npos);
  }
  // OpenBLAS matches the core type without case, and so does the guard.
  EXPECT_FALSE(plan_blas_pin({"portable", "haswell", true}).restart);
}

// The pinned kernels cost 1.7x on an AVX-512 CPU: by default OpenBLAS keeps its own choice,
// silently (PyTorch's determinism is asked for too).
TEST(BlasPin, NativeByDefaultWithoutAWord) {
  for (const std::string core : {"", "Zen"}) {
    const BlasPin pin = plan_blas_pin({"", core, true});
    EXPECT_EQ(pin.state, BlasPin::State::kNative);
    EXPECT_FALSE(pin.restart);
    EXPECT_EQ(pin.note, "");
  }
}

TEST(BlasPin, RespectsTheUsersCoreTypeAndSaysSo) {
  const BlasPin pin = plan_blas_pin({"portable", "Sandybridge", true});
  EXPECT_EQ(pin.state, BlasPin::State::kUserCore);
  EXPECT_FALSE(pin.restart);
  EXPECT_NE(pin.note.find("OPENBLAS_CORETYPE=Sandybridge"), std::string::npos) << pin.note;
  EXPECT_NE(pin.note.find("does not pin"), std::string::npos) << pin.note;
}

TEST(BlasPin, CpuWithoutAvx2KeepsOpenBlasChoiceAndSaysResultsAreNotPortable) {
  const BlasPin pin = plan_blas_pin({"portable", "", false});
  EXPECT_EQ(pin.state, BlasPin::State::kCpuLacksAvx2);
  EXPECT_FALSE(pin.restart) << "the Haswell kernels would die of SIGILL here";
  EXPECT_NE(pin.note.find("lacks AVX2"), std::string::npos) << pin.note;
}

TEST(BlasPin, NativeLeavesOpenBlasAlone) {
  for (const std::string core : {"", "Zen", "Haswell"}) {
    for (const bool avx2 : {true, false}) {
      const BlasPin pin = plan_blas_pin({"native", core, avx2});
      EXPECT_EQ(pin.state, BlasPin::State::kNative);
      EXPECT_FALSE(pin.restart);
      EXPECT_NE(pin.note.find("CONFLUX_BLAS_PIN=native"), std::string::npos) << pin.note;
    }
  }
}

TEST(BlasPin, UnknownModeIsBadInputNamingTheVariable) {
  testing::expect_input_error(
      [] {
        plan_blas_pin({"fast", "", true});
      },
      {"CONFLUX_BLAS_PIN", "portable or native", "'fast'"});
}

TEST(BlasPin, ThisProcessReadsTheEnvironment) {
  const ScopedEnv mode("CONFLUX_BLAS_PIN", "native");
  EXPECT_EQ(current_blas_pin().state, BlasPin::State::kNative);
  const ScopedEnv portable("CONFLUX_BLAS_PIN", "portable");
  const ScopedEnv core("OPENBLAS_CORETYPE", "Sandybridge");
  EXPECT_EQ(current_blas_pin().state, BlasPin::State::kUserCore);
  // No restart is asked for here, so pin_blas_kernels returns instead of replacing the test.
  EXPECT_EQ(pin_blas_kernels(nullptr).state, BlasPin::State::kUserCore);
}

}  // namespace
}  // namespace conflux
