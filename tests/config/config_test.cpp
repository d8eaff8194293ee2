#include "conflux/config/config.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>

#include "../support/temp_dir.hpp"
#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"

namespace conflux {
namespace {

constexpr const char* kValid = R"(
[run]
seed = 7
dir = "runs/{name}-{time}"
name = "t"

[cluster]
trainers = 2

[data]
dataset = "mnist"
dir = "/data"

[transform]
pad = 2
crop = 28
mean = [0.1307]
std = [0.3081]

[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = 10

[train]
lr = 0.05
batch_size = 128
)";

ConfigSources sources(std::vector<std::string> overrides = {}) {
  return ConfigSources{std::move(overrides), "", "20260101-000000"};
}

Config load(const std::string& text, std::vector<std::string> overrides = {}) {
  return load_config_string(text, "test.toml", sources(std::move(overrides)));
}

// Asserts that loading fails with InputError whose message contains every fragment.
void expect_bad(const std::string& text, std::vector<std::string> fragments,
                std::vector<std::string> overrides = {}) {
  try {
    load(text, std::move(overrides));
    ADD_FAILURE() << "config was accepted:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    for (const auto& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message lacks '" << f << "': " << e.what();
    }
  }
}

std::string with(const std::string& from, const std::string& to) {
  std::string text = kValid;
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

TEST(Config, LoadsValidConfigWithDefaults) {
  const Config c = load(kValid);
  EXPECT_EQ(c.run().seed, 7u);
  EXPECT_EQ(c.run().dir, "runs/t-20260101-000000");
  EXPECT_EQ(c.cluster().trainers, 2);
  EXPECT_EQ(c.cluster().workers, -1);
  EXPECT_EQ(c.data().dataset, "mnist");
  EXPECT_EQ(c.data().dir, "/data");
  EXPECT_EQ(c.transform().crop, 28);
  EXPECT_FALSE(c.transform().hflip);
  ASSERT_EQ(c.layers().size(), 2u);
  EXPECT_EQ(c.layers()[1].type, "linear");
  EXPECT_EQ(c.layers()[1].out, 10);
  EXPECT_DOUBLE_EQ(c.train().lr, 0.05);
  EXPECT_EQ(c.train().epochs, 1);  // default
  EXPECT_EQ(c.where("train.lr"), "test.toml:27:6");
  EXPECT_EQ(c.where("train.epochs"), "default");
}

TEST(Config, ResolvedTomlReloadsToTheSameConfig) {
  const Config c = load(kValid);
  const Config again = load(c.resolved_toml());
  EXPECT_EQ(again.resolved_toml(), c.resolved_toml());
  EXPECT_NE(c.resolved_toml().find("epochs = 1"), std::string::npos);
}

TEST(Config, OverridesApplyInOrderAndAreTyped) {
  const Config c = load(kValid, {"train.lr=0.1", "train.epochs=3", "data.dataset=cifar10",
                                 "transform.hflip=true", "train.lr=0.2"});
  EXPECT_DOUBLE_EQ(c.train().lr, 0.2);
  EXPECT_EQ(c.train().epochs, 3);
  EXPECT_EQ(c.data().dataset, "cifar10");
  EXPECT_TRUE(c.transform().hflip);
  EXPECT_EQ(c.where("train.lr"), "--set train.lr=0.2");
}

TEST(Config, DataDirFallsBackToEnvironmentValue) {
  const Config c = load_config_string(with("dir = \"/data\"", ""), "t.toml",
                                      ConfigSources{{}, "/from/env", "now"});
  EXPECT_EQ(c.data().dir, "/from/env");
}

TEST(Config, WorkersForChecksRankCount) {
  const Config c = load(kValid);
  EXPECT_EQ(c.workers_for(2), 0);
  EXPECT_EQ(c.workers_for(4), 2);
  try {
    c.workers_for(1);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs at least 2 ranks, but the job has 1"),
              std::string::npos);
  }
  const Config fixed = load(kValid, {"cluster.workers=1"});
  EXPECT_EQ(fixed.workers_for(3), 1);
  EXPECT_THROW(fixed.workers_for(4), InputError);
}

TEST(Config, OffloadRatioAutoAndTheProfileSection) {
  const Config fixed = load(kValid, {"data.offload_ratio=0.25"});
  EXPECT_FALSE(fixed.data().offload_auto);
  EXPECT_DOUBLE_EQ(fixed.data().offload_ratio_for(1), 0.25);
  EXPECT_TRUE(fixed.profile().enabled);
  EXPECT_DOUBLE_EQ(fixed.profile().bottleneck_threshold, 1.3);
  const Config automatic =
      load(with("dataset = \"mnist\"", "dataset = \"mnist\"\noffload_ratio = \"auto\""),
           {"profile.interval_s=0.25", "profile.steps=7"});
  EXPECT_TRUE(automatic.data().offload_auto);
  EXPECT_DOUBLE_EQ(automatic.data().offload_ratio_for(0), 0);  // the controller starts at 0
  EXPECT_DOUBLE_EQ(automatic.profile().interval_s, 0.25);
  EXPECT_EQ(automatic.profile().steps, 7);
  // The resolved config keeps "auto".
  EXPECT_NE(automatic.resolved_toml().find("offload_ratio = 'auto'"), std::string::npos)
      << automatic.resolved_toml();
  EXPECT_TRUE(load(kValid, {"data.offload_ratio=auto"}).data().offload_auto);
  EXPECT_EQ(load(kValid, {"fault.mode=slow", "fault.factor=3"}).fault().factor, 3);
}

// The bad configs: each must be refused with a message naming the place and the problem.
TEST(ConfigBad, OffloadRatioIsAutoOrANumberInRange) {
  expect_bad(with("dataset = \"mnist\"", "dataset = \"mnist\"\noffload_ratio = \"fast\""),
             {"test.toml:12:17", "data.offload_ratio: expected \"auto\" or a number in [0, 1]",
              "got string 'fast'"});
  expect_bad(kValid, {"data.offload_ratio: expected \"auto\" or a number in [0, 1]"},
             {"data.offload_ratio=1.5"});
  expect_bad(kValid, {"data.offload_ratio = \"auto\" and data.offload_ratios both given"},
             {"data.offload_ratio=auto", "data.offload_ratios=[0.5, 0.5]"});
  expect_bad(kValid, {"needs the profiler (profile.enabled = true)"},
             {"data.offload_ratio=auto", "profile.enabled=false"});
  expect_bad(kValid, {"profile.bottleneck_threshold", "in [1, 100]"},
             {"profile.bottleneck_threshold=0.5"});
}
TEST(ConfigBad, SyntaxErrorHasLineAndColumn) {
  expect_bad("[run]\nseed = = 3\n", {"test.toml:2:", "TOML syntax error"});
}
TEST(ConfigBad, UnknownKeyGetsDidYouMean) {
  expect_bad(with("lr = 0.05", "lr = 0.05\nlearning_rat = 1"),
             {"test.toml:28:1", "unknown key 'train.learning_rat'"});
  expect_bad(with("batch_size = 128", "batch_sise = 128"),
             {"unknown key 'train.batch_sise'", "did you mean 'train.batch_size'?"});
}
TEST(ConfigBad, UnknownSection) {
  expect_bad(std::string(kValid) + "\n[trian]\nx = 1\n",
             {"unknown section 'trian'", "did you mean 'train'?"});
}
TEST(ConfigBad, WrongType) {
  expect_bad(with("lr = 0.05", "lr = \"fast\""),
             {"test.toml:27:6", "train.lr: expected a number", "got string"});
  expect_bad(with("trainers = 2", "trainers = 2.5"), {"cluster.trainers: expected an integer"});
}
TEST(ConfigBad, OutOfRange) {
  expect_bad(with("lr = 0.05", "lr = -1.0"), {"train.lr", "in (0, 100]", "-1"});
  expect_bad(with("lr = 0.05", "lr = 0"), {"train.lr", "in (0, 100]"});
  expect_bad(with("trainers = 2", "trainers = 0"),
             {"cluster.trainers", "in [1, 65536]", "got integer 0"});
}
TEST(ConfigBad, MissingRequiredKey) {
  expect_bad(with("dataset = \"mnist\"", ""), {"missing required key 'data.dataset'"});
}
TEST(ConfigBad, BadChoiceGetsHint) {
  expect_bad(with("dataset = \"mnist\"", "dataset = \"minst\""),
             {"data.dataset", "one of", "did you mean 'mnist'?"});
}
TEST(ConfigBad, SectionThatIsNotATable) {
  expect_bad("train = 3\n", {"'train' must be a table"});
}
TEST(ConfigBad, BadListEntry) {
  expect_bad(with("std = [0.3081]", "std = [0.0]"), {"transform.std"});
  expect_bad(with("std = [0.3081]", "std = []"), {"transform.std", "a list of numbers"});
  expect_bad(with("mean = [0.1307]", "mean = [\"a\"]"), {"transform.mean"});
}
TEST(ConfigBad, MeanStdLengthsDisagree) {
  expect_bad(with("mean = [0.1307]\nstd = [0.3081]", "mean = [0.1, 0.2]\nstd = [0.1, 0.2, 0.3]"),
             {"test.toml:18:", "transform.mean has 2 values but transform.std has 3"});
}
TEST(ConfigBad, BatchSmallerThanTrainers) {
  expect_bad(with("trainers = 2", "trainers = 4"), {}, {"train.batch_size=3"});
  expect_bad(kValid, {"train.batch_size = 1 is smaller than cluster.trainers = 2"},
             {"train.batch_size=1"});
}
TEST(ConfigBad, UnknownLayerType) {
  expect_bad(with("type = \"flatten\"", "type = \"flaten\""),
             {"model.layers[0].type", "unknown layer type \"flaten\"", "did you mean 'flatten'?"});
}
TEST(ConfigBad, LayerKeyNotValidForType) {
  expect_bad(with("out = 10", "out = 10\nkernel = 3"),
             {"model.layers[1]", "key 'kernel' is not valid for a linear layer"});
}
TEST(ConfigBad, LayerMissingRequiredKey) {
  expect_bad(with("out = 10", ""), {"model.layers[1]", "a linear layer needs 'out'"});
}
TEST(ConfigBad, LayersMissingOrEmpty) {
  std::string no_layers = kValid;
  no_layers.erase(no_layers.find("[[model.layers]]"),
                  no_layers.find("[train]") - no_layers.find("[[model.layers]]"));
  expect_bad(no_layers, {"missing required key 'model.layers'"});
  expect_bad(no_layers + "[model]\nlayers = []\n", {"model.layers: expected a non-empty list"});
}
TEST(ConfigBad, BadOverrides) {
  expect_bad(kValid, {"--set train.lr", "expected key=value"}, {"train.lr"});
  expect_bad(kValid, {"--set trian.lr=1", "unknown key 'trian.lr'", "did you mean 'train.lr'?"},
             {"trian.lr=1"});
  expect_bad(kValid, {"--set train.lr=abc", "train.lr: expected a number"}, {"train.lr=abc"});
  expect_bad(kValid, {"--set train.epochs=0", "train.epochs"}, {"train.epochs=0"});
  // Everything after the value was once dropped silently (train.epochs kept its value).
  expect_bad(kValid, {"--set train.lr=0.1", "one value, found trailing content"},
             {"train.lr=0.1\nepochs=99"});
  expect_bad(kValid, {"trailing content"}, {"train.lr=0.1 # note\nx = 1"});
  expect_bad(kValid, {"trailing content"}, {"run.name=bare\nrun.seed=1"});
}
TEST(ConfigBad, MissingFileNamesIt) {
  try {
    load_config_file("/nonexistent/x.toml", sources());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.toml: cannot open config file"),
              std::string::npos);
  }
}
// What load_config_file says about `path`: its InputError message, or "accepted".
std::string load_file_error(const std::filesystem::path& path) {
  try {
    load_config_file(path, sources());
    return "accepted";
  } catch (const InputError& e) {
    return e.what();
  }
}

TEST(ConfigBad, DirectoryIsNotAConfigFile) {
  const testing::TempDir dir;
  const std::string message = load_file_error(dir.path());
  EXPECT_NE(message.find(dir.path().string() + ": not a regular file (a directory); expected a "
                                               "TOML config file"),
            std::string::npos)
      << message;
}

TEST(ConfigBad, FifoIsRefusedWithoutBlocking) {
  const testing::TempDir dir;
  const std::filesystem::path fifo = dir.path() / "config.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto result = std::async(std::launch::async, [&] { return load_file_error(fifo); });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader stuck in open(): a writer that comes and goes gives it end-of-file.
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    ADD_FAILURE() << "load_config_file blocked on a FIFO that has no writer";
  }
  const std::string message = result.get();
  EXPECT_NE(message.find(fifo.string() + ": not a regular file (a FIFO)"), std::string::npos)
      << message;
}

TEST(ConfigBad, CharacterDeviceIsRefused) {
  EXPECT_NE(load_file_error("/dev/zero").find("/dev/zero: not a regular file (a character device)"),
            std::string::npos);
}

TEST(ConfigBad, OversizedFileIsRefusedBeforeReading) {
  const testing::TempDir dir;
  const std::filesystem::path big = dir.path() / "big.toml";
  std::ofstream(big).close();
  std::filesystem::resize_file(big, 3 * (std::uintmax_t{1} << 30));  // sparse: costs no disk
  const std::string message = load_file_error(big);
  EXPECT_NE(message.find(big.string() + ": 3.0 GiB is larger than the 1 MiB a config may have"),
            std::string::npos)
      << message;
  // A valid config just under the cap still loads.
  const std::filesystem::path padded = dir.path() / "padded.toml";
  std::ofstream(padded) << kValid << "#"
                        << std::string((1 << 20) - 2 - std::string(kValid).size(), 'x') << "\n";
  EXPECT_EQ(std::filesystem::file_size(padded), std::uintmax_t{1} << 20);
  EXPECT_EQ(load_file_error(padded), "accepted");
}

TEST(ConfigBad, UnknownRunDirPlaceholder) {
  expect_bad(with("dir = \"runs/{name}-{time}\"", "dir = \"runs/{date}\""),
             {"test.toml:4:7", "run.dir", "unknown placeholder {date}", "{time}", "{name}"});
  expect_bad(kValid, {"--set run.dir=x/{name}/{Time}", "unknown placeholder {Time}"},
             {"run.dir=x/{name}/{Time}"});
  // The template is checked, not the result: a run name may hold braces.
  EXPECT_EQ(load(kValid, {"run.name={date}"}).run().dir, "runs/{date}-20260101-000000");
}

TEST(ConfigBad, ModelLayersCannotBeSetWithSet) {
  try {
    load(kValid, {"model.layers=3"});
    FAIL();
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--set model.layers=3: model.layers is a list of [[model.layers]] "
                           "tables and cannot be set with --set; edit the config file"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;
  }
}

TEST(ConfigSchema, EveryKeyIsDocumentedInTheReferencePage) {
  const std::string md = config_reference_markdown();
  std::ifstream docs("docs/config.md");
  ASSERT_TRUE(docs.good()) << "run the tests from the repository root";
  const std::string page((std::istreambuf_iterator<char>(docs)), {});
  for (const auto& key : config_keys()) {
    EXPECT_NE(md.find("`" + key.path + "`"), std::string::npos) << key.path;
    EXPECT_NE(page.find("`" + key.path + "`"), std::string::npos)
        << key.path << " is missing from docs/config.md (conflux config reference)";
    EXPECT_FALSE(key.doc.empty()) << key.path;
  }
}

TEST(ConfigSchema, ShippedConfigsLoad) {
  for (const char* path : {"configs/mnist_mlp.toml", "configs/cifar10_cnn.toml"}) {
    const Config c = load_config_file(path, sources());
    EXPECT_GE(c.layers().size(), 3u) << path;
  }
}

}  // namespace
}  // namespace conflux
