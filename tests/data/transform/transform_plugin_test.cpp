#include "conflux/data/transform/transform_plugin.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;

using conflux::testing::expect_input_error;

/// The example plugin, built by `make plugins` into the lib/ directory beside this binary's bin/
/// (build/lib for release, build/<BUILD>/lib otherwise), so no environment variable is needed.
fs::path solarize_path() {
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" /
         "libconflux-solarize.so";
}

std::shared_ptr<const TransformPlugin> load_solarize(const std::string& args) {
  const fs::path path = solarize_path();
  if (!fs::exists(path)) ADD_FAILURE() << path << " is missing: run `make plugins`";
  return TransformPlugin::load(path, args);
}

/// Values k/16 for k = 0..16, repeated: both sides of the thresholds used, and 0.25, 0.5 exactly.
std::vector<float> ramp(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 17) / 16.0f;
  return values;
}

constexpr ImageShape kShape{3, 4, 4};

TEST(TransformPlugin, LoadsAndInvertsExactlyThePixelsAtOrAboveTheThreshold) {
  auto plugin = load_solarize("threshold=0.5, probability=1");
  EXPECT_EQ(plugin->name(), "solarize");
  EXPECT_EQ(plugin->library(), solarize_path());
  const std::vector<float> input = ramp(kShape.size());
  for (std::uint64_t key : {0ull, 1ull, 12345ull, ~0ull}) {
    std::vector<float> image = input;
    plugin->apply(image.data(), kShape, key);
    for (std::size_t i = 0; i < image.size(); ++i) {
      const float expected = input[i] >= 0.5f ? 1.0f - input[i] : input[i];
      EXPECT_EQ(image[i], expected) << "pixel " << i << " key " << key;
    }
  }
}

TEST(TransformPlugin, ProbabilityZeroLeavesImagesUnchanged) {
  auto plugin = load_solarize("probability=0,threshold=0");
  const std::vector<float> input = ramp(kShape.size());
  for (std::uint64_t key = 0; key < 64; ++key) {
    std::vector<float> image = input;
    plugin->apply(image.data(), kShape, key);
    EXPECT_EQ(image, input) << "key " << key;
  }
}

TEST(TransformPlugin, DeterministicPerKeyAndBothOutcomesOccur) {
  auto plugin = load_solarize("threshold=0.25,probability=0.5");
  const std::vector<float> input = ramp(kShape.size());
  int solarized = 0;
  constexpr int kKeys = 256;
  for (std::uint64_t key = 0; key < kKeys; ++key) {
    std::vector<float> first = input;
    std::vector<float> second = input;
    plugin->apply(first.data(), kShape, key);
    plugin->apply(second.data(), kShape, key);
    EXPECT_EQ(first, second) << "key " << key;
    solarized += first != input;
  }
  EXPECT_GT(solarized, kKeys / 4);
  EXPECT_LT(solarized, 3 * kKeys / 4);
}

TEST(TransformPlugin, ConcurrentApplyMatchesSequential) {
  auto plugin = load_solarize("threshold=0.3,probability=0.5");
  constexpr int kThreads = 8;
  constexpr int kPerThread = 64;
  const std::vector<float> input = ramp(kShape.size());
  std::vector<std::vector<float>> sequential(kThreads * kPerThread, input);
  for (std::size_t i = 0; i < sequential.size(); ++i) {
    plugin->apply(sequential[i].data(), kShape, i);
  }
  std::vector<std::vector<float>> parallel(sequential.size(), input);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int j = 0; j < kPerThread; ++j) {
        const std::size_t i = static_cast<std::size_t>(t) * kPerThread + j;
        plugin->apply(parallel[i].data(), kShape, i);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(parallel, sequential);
}

TEST(TransformPlugin, EmptyArgsUseDefaults) {
  auto plugin = load_solarize("");
  std::vector<float> image = ramp(kShape.size());
  EXPECT_NO_THROW(plugin->apply(image.data(), kShape, 7));
}

TEST(TransformPlugin, BadArgsAreInputErrorsWithThePluginsMessage) {
  const std::string rejected = "transform.plugin_args rejected by plugin 'solarize'";
  expect_input_error([] { load_solarize("threshold=abc"); }, {rejected, "threshold", "'abc'"});
  expect_input_error([] { load_solarize("probability=1.5"); },
                     {rejected, "probability", "outside [0, 1]"});
  expect_input_error([] { load_solarize("threshold=0.5,strength=2"); },
                     {rejected, "unknown key 'strength'", "threshold, probability"});
  expect_input_error([] { load_solarize("threshold"); }, {rejected, "expected key=value"});
  expect_input_error([] { load_solarize("threshold=0.1,threshold=0.2"); },
                     {rejected, "threshold given twice"});
}

TEST(TransformPlugin, ApplyFailureIsRuntimeErrorNamingThePlugin) {
  auto plugin = load_solarize("probability=1");
  float pixel = 0.75f;
  try {
    plugin->apply(&pixel, ImageShape{-1, 1, 1}, 0);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    const std::string message = e.what();
    EXPECT_NE(message.find("'solarize'"), std::string::npos) << message;
    EXPECT_NE(message.find("invalid image shape -1x1x1"), std::string::npos) << message;
  }
}

TEST(TransformPlugin, MissingLibraryIsInputErrorNamingThePath) {
  conflux::testing::TempDir dir;
  const fs::path missing = dir.path() / "libconflux-nothing.so";
  expect_input_error([&] { TransformPlugin::load(missing, ""); },
                     {"transform.plugin: cannot load", missing.string()});
}

TEST(TransformPlugin, LibraryWithoutEntryPointIsInputError) {
  // zlib is linked into this binary, so the loader finds it, and it has no plugin entry point.
  expect_input_error([] { TransformPlugin::load("libz.so.1", ""); },
                     {"'libz.so.1'", "has no entry point conflux_transform_plugin_v1"});
}

TEST(TransformPlugin, NonLibraryFileIsInputError) {
  conflux::testing::TempDir dir;
  const fs::path bogus = dir.path() / "libbogus.so";
  std::ofstream(bogus) << "not an ELF file\n";
  expect_input_error([&] { TransformPlugin::load(bogus, ""); }, {"cannot load", bogus.string()});
}

}  // namespace
}  // namespace conflux::data
