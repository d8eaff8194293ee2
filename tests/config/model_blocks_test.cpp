// [[model.layers]] with names, inputs, real-valued keys and blocks repeated from
// [[model.blocks.NAME]]: the expanded specs and the errors of bad ones (with file:line).

#include <gtest/gtest.h>

#include <string>

#include "../support/config_text.hpp"
#include "../support/temp_dir.hpp"
#include "conflux/config/config.hpp"

namespace conflux {
namespace {

using testing::expect_input_error;
using testing::load_with;

constexpr const char* kHead = R"([data]
dataset = "cifar10"
dir = "/data"
)";

// A residual block with a channel argument, repeated twice after a stem.
constexpr const char* kResidual = R"(
[[model.blocks.res]]
type = "conv2d"
out = "$channels"
padding = 1
[[model.blocks.res]]
type = "batchnorm"
momentum = 0.2
name = "bn"
[[model.blocks.res]]
type = "add"
inputs = ["bn", "input"]

[[model.layers]]
type = "conv2d"
out = 8
padding = 1
[[model.layers]]
type = "block"
block = "res"
repeat = 2
channels = 8
name = "stage"
[[model.layers]]
type = "dropout"
rate = 0.25
inputs = ["stage"]
[[model.layers]]
type = "globalavgpool"
[[model.layers]]
type = "linear"
out = 10
)";

TEST(ModelBlocks, ABlockExpandsInPlaceWithScopedNames) {
  const Config config = load_with(std::string(kHead) + kResidual, {}, "m.toml");
  const std::vector<LayerSpec>& l = config.layers();
  ASSERT_EQ(l.size(), 10u);
  EXPECT_EQ(l[0].name, "layer0");  // named because the block refers to its input
  EXPECT_EQ(l[1].type, "conv2d");
  EXPECT_EQ(l[1].out, 8);
  EXPECT_EQ(l[1].name, "stage.0.0");
  EXPECT_TRUE(l[1].inputs.empty());  // the previous layer: the block's input
  EXPECT_EQ(l[2].name, "stage.0.bn");
  EXPECT_DOUBLE_EQ(l[2].momentum, 0.2);
  EXPECT_EQ(l[3].inputs, (std::vector<std::string>{"stage.0.bn", "layer0"}));
  EXPECT_EQ(l[3].name, "stage.0.2");
  EXPECT_EQ(l[6].inputs, (std::vector<std::string>{"stage.1.bn", "stage.0.2"}));
  EXPECT_EQ(l[7].type, "dropout");
  EXPECT_DOUBLE_EQ(l[7].rate, 0.25);
  EXPECT_EQ(l[7].inputs, std::vector<std::string>{"stage.1.2"});  // the instance's output
  EXPECT_NE(l[4].where.find("m.toml:"), std::string::npos) << l[4].where;
  EXPECT_NE(l[4].where.find("block instance model.layers[1]"), std::string::npos) << l[4].where;
}

TEST(ModelBlocks, TheResolvedConfigHoldsTheExpandedGraphAndLoadsToTheSameLayers) {
  const Config config = load_with(std::string(kHead) + kResidual, {}, "m.toml");
  const Config again = load_with(config.resolved_toml(), {}, "resolved.toml");
  EXPECT_EQ(again.layers(), config.layers());
}

void expect_block_error(const std::string& from, const std::string& to,
                        std::initializer_list<std::string> parts) {
  std::string text = std::string(kHead) + kResidual;
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  expect_input_error([&] { load_with(text, {}, "m.toml"); }, parts);
}

TEST(ModelBlocks, BadBlocksAreErrorsWithTheirPlace) {
  expect_block_error("block = \"res\"", "block = \"rse\"",
                     {"m.toml:23:9: model.layers[1].block: expected the name of a "
                      "[[model.blocks.NAME]] list",
                      "did you mean 'res'", "defined: res"});
  expect_block_error("channels = 8", "chanels = 8",
                     {"m.toml:7:7: model.blocks.res[0]: argument 'channels' is not given by the "
                      "block instance model.layers[1] at m.toml:"});
  expect_block_error("channels = 8", "channels = 8\nwidth = 3",
                     {"model.layers[1]: argument 'width' is not used by block 'res'"});
  expect_block_error("channels = 8", "channels = 0",
                     {"m.toml:25:12: model.blocks.res[0].out: expected an integer in [1, 1048576], "
                      "got integer 0"});
  expect_block_error("repeat = 2", "repeat = 0", {"model.layers[1].repeat: expected an integer"});
  expect_block_error("rate = 0.25", "rate = 1.5", {"model.layers[2].rate: expected a number"});
  expect_block_error("momentum = 0.2", "momentum = 0.2\nkernel = 3",
                     {"model.blocks.res[1]: key 'kernel' is not valid for a batchnorm layer"});
  expect_block_error("out = 8\npadding", "out = \"$channels\"\npadding",
                     {"model.layers[0]: \"$channels\" refers to a block argument, but the layer "
                      "is not in a block"});
  expect_block_error("name = \"stage\"", "name = \"input\"",
                     {"model.layers[1].name: expected a non-empty string other than \"input\""});
}

}  // namespace
}  // namespace conflux
