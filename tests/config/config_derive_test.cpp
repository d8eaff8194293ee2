// Configs derived in code (Config::with), the resolved TOML written through the schema, and
// the schema as the one owner of every key (keys.hpp).

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../support/config_text.hpp"
#include "../support/temp_dir.hpp"
#include "conflux/config/config.hpp"
#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"

namespace conflux {
namespace {

const std::string kConfig = std::string(testing::kMinimalConfig) + R"(
[run]
name = "t"
dir = "runs/{name}-{time}"
[cluster]
trainers = 2
peer_timeout_s = 60.0
[transform]
mean = [0.1307, 0]
std = [0.3081]
rotation_degrees = 15
[train]
lr = 0.05
)";

Config load(std::vector<std::string> overrides = {}) {
  return load_config_string(kConfig, "test.toml",
                            ConfigSources{std::move(overrides), "/env", "20260101-000000"});
}

using testing::expect_input_error;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ConfigWith, SetsTypedValuesAndKeepsTheRest) {
  const Config base = load();
  const Config c = base.with({{"cluster.trainers", 4},
                              {"train.batch_size", 256},
                              {"train.lr", 0.2},
                              {"train.eval", false},
                              {"comm.strategy", "kreduce"},
                              {"data.offload_ratios", std::vector<double>{0.5, 0.5, 0, 1}}},
                             "the test");
  EXPECT_EQ(c.cluster().trainers, 4);
  EXPECT_EQ(c.train().batch_size, 256);
  EXPECT_DOUBLE_EQ(c.train().lr, 0.2);
  EXPECT_FALSE(c.train().eval);
  EXPECT_EQ(c.comm().strategy, "kreduce");
  EXPECT_EQ(c.data().offload_ratios, (std::vector<float>{0.5f, 0.5f, 0, 1}));
  EXPECT_EQ(c.where("train.lr"), "the test");
  EXPECT_EQ(c.where("data.dataset"), base.where("data.dataset"));
  EXPECT_EQ(c.data().dataset, "mnist");
  EXPECT_EQ(c.layers(), base.layers());
  EXPECT_EQ(base.cluster().trainers, 2);  // the base is unchanged
  // The resolved TOML is the derived config's: it reloads to the same config.
  EXPECT_TRUE(contains(c.resolved_toml(), "trainers = 4")) << c.resolved_toml();
  const Config again = load_config_string(c.resolved_toml(), "again", c.sources());
  EXPECT_EQ(again.resolved_toml(), c.resolved_toml());
}

TEST(ConfigWith, ChecksLikeTheLoader) {
  const Config base = load();
  expect_input_error(
      [&] {
        base.with({{"train.lr", 0}}, "plan");
      },
      {"plan: train.lr: expected a number in (0, 100], got integer 0"});
  expect_input_error(
      [&] {
        base.with({{"train.lr", "fast"}}, "plan");
      },
      {"train.lr: expected a number"});
  expect_input_error(
      [&] {
        base.with({{"train.device", "gpus"}}, "plan");
      },
      {"did you mean 'gpu'?"});
  expect_input_error(
      [&] {
        base.with({{"train.lrr", 0.1}}, "plan");
      },
      {"plan: unknown key 'train.lrr'; did you mean 'train.lr'?"});
  expect_input_error(
      [&] {
        base.with({{"cluster.trainers", 2.5}}, "plan");
      },
      {"cluster.trainers: expected an integer"});
  // Cross-key rules see the derived values together.
  expect_input_error(
      [&] {
        base.with({{"train.batch_size", 1}}, "plan");
      },
      {"plan: train.batch_size = 1 is smaller than cluster.trainers = 2"});
  EXPECT_NO_THROW(base.with({{"cluster.trainers", 1}, {"train.batch_size", 1}}));
}

TEST(ConfigWith, ResolvesHookedKeysAgain) {
  const Config base = load();
  EXPECT_EQ(base.run().dir, "runs/t-20260101-000000");
  EXPECT_EQ(base.checkpoint().dir, "runs/t-20260101-000000/checkpoints");
  const Config renamed = base.with({{"run.name", "u"}});
  EXPECT_EQ(renamed.run().dir, "runs/u-20260101-000000");
  EXPECT_EQ(renamed.checkpoint().dir, "runs/u-20260101-000000/checkpoints");
  EXPECT_TRUE(contains(renamed.resolved_toml(), "dir = 'runs/u-20260101-000000'"));
  const Config env_data = base.with({{"data.dir", ""}});
  EXPECT_EQ(env_data.data().dir, "/env");
  const Config automatic = base.with({{"data.offload_ratio", "auto"}});
  EXPECT_TRUE(automatic.data().offload_auto);
  const Config fixed = automatic.with({{"data.offload_ratio", 0.25}});
  EXPECT_FALSE(fixed.data().offload_auto);
  EXPECT_DOUBLE_EQ(fixed.data().offload_ratio_for(1), 0.25);
  expect_input_error(
      [&] {
        base.with({{"run.dir", ""}}, "plan");
      },
      {"plan: run.dir must not be empty"});
}

TEST(ConfigResolvedToml, KeepsTheSpellingOfNumbers) {
  const Config c = load({"cluster.blas_threads=2", "checkpoint.every_seconds=30"});
  const std::string& toml = c.resolved_toml();
  EXPECT_TRUE(contains(toml, "rotation_degrees = 15\n")) << toml;  // a float key, as written
  EXPECT_TRUE(contains(toml, "peer_timeout_s = 60.0\n")) << toml;
  EXPECT_TRUE(contains(toml, "every_seconds = 30\n")) << toml;
  EXPECT_TRUE(contains(toml, "worker_timeout_s = 30\n")) << toml;  // defaults as documented
  EXPECT_TRUE(contains(toml, "delay_s = 1.0\n")) << toml;
  // Float members show the decimal they were written with, read as TOML reads it.
  EXPECT_TRUE(contains(toml, "mean = [ 0.13070000000000001, 0 ]\n")) << toml;
  EXPECT_TRUE(contains(toml, "resized_crop_ratio_max = 1.3333333000000001\n")) << toml;
  EXPECT_EQ(c.value_text("transform.mean"), "[ 0.13070000000000001, 0 ]");
  EXPECT_EQ(c.value_text("data.dataset"), "'mnist'");
  // An integer given in code to a number key is spelled as an integer too.
  EXPECT_EQ(c.with({{"train.lr", 1}}).value_text("train.lr"), "1");
  EXPECT_EQ(c.with({{"train.lr", 1.0}}).value_text("train.lr"), "1.0");
}

TEST(ConfigResolvedToml, EveryKeyRoundTripsThroughItsBinding) {
  const Config c = load({"data.offload_ratios=[0.25, 0.75]", "transform.hflip=true",
                         "data.hdf5_file=x.h5", "transform.plugin=lib/p.so"});
  const Config again = load_config_string(c.resolved_toml(), "again", c.sources());
  for (const KeySpec& spec : config_keys()) {
    EXPECT_TRUE(spec.binding.get(again) == spec.binding.get(c)) << spec.path;
    EXPECT_EQ(again.value_text(spec.path), c.value_text(spec.path)) << spec.path;
  }
  EXPECT_EQ(again.layers(), c.layers());
  EXPECT_EQ(again.transform().resized_crop_ratio_max, c.transform().resized_crop_ratio_max);
}

TEST(ConfigSchema, SectionDefaultsAreTheSchemaDefaults) {
  // A key's C++ default and its documented default come from the same keys.hpp entry.
  const Config c = load();
  EXPECT_EQ(DataSection{}.prefetch_batches, c.data().prefetch_batches);
  EXPECT_EQ(find_key("data.prefetch_batches")->default_toml, "4");
  EXPECT_EQ(TransformSection{}.resized_crop_ratio_max, c.transform().resized_crop_ratio_max);
  EXPECT_EQ(find_key("transform.mean")->default_toml, "[0.0]");
  EXPECT_EQ(find_key("data.offload_ratios")->default_toml, "[]");
  EXPECT_EQ(find_key("data.dataset")->default_toml, "");  // required
  EXPECT_EQ(PricesSection{}.lambda_request, c.prices().lambda_request);
  EXPECT_EQ(FaultSection{}.factor, c.fault().factor);
}

TEST(ConfigSchema, ReferencePageIsGeneratedFromTheSchema) {
  std::ifstream docs("docs/config.md");
  ASSERT_TRUE(docs.good()) << "run the tests from the repository root";
  std::stringstream page;
  page << docs.rdbuf();
  const std::string md = config_reference_markdown();
  ASSERT_GE(page.str().size(), md.size());
  EXPECT_EQ(page.str().substr(page.str().size() - md.size()), md)
      << "docs/config.md is out of date: run `make docs`";
}

}  // namespace
}  // namespace conflux
