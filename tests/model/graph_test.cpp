// Model graphs: wiring (names, inputs, order), equivalence of a named chain with a plain list,
// and the errors of bad graphs.

#include "conflux/model/graph.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/model_io.hpp"

namespace conflux::model {
namespace {

std::string error_of(const std::vector<LayerSpec>& specs, SampleShape input = {2, 6, 6},
                     int classes = 4) {
  try {
    Model model(specs, input, classes, 1);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

void expect_error(const std::vector<LayerSpec>& specs, const std::vector<std::string>& parts) {
  const std::string message = error_of(specs);
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing: " << part << "\nin: " << message;
  }
}

TEST(ModelGraph, AListIsAChainInItsOrder) {
  const std::vector<LayerSpec> specs{
      {.type = "flatten"}, {.type = "linear", .out = 5}, {.type = "linear", .out = 4}};
  const GraphWiring w = wire_graph(specs);
  EXPECT_TRUE(w.chain());
  EXPECT_EQ(w.order, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(w.inputs[0], std::vector<std::size_t>{kModelInput});
}

TEST(ModelGraph, ForwardReferencesRunAfterTheirInputs) {
  const std::vector<LayerSpec> specs{
      {.type = "linear", .out = 4, .name = "head", .inputs = {"flat"}},
      {.type = "flatten", .name = "flat", .inputs = {"input"}},
      {.type = "linear", .out = 4, .inputs = {"head"}}};
  const GraphWiring w = wire_graph(specs);
  EXPECT_FALSE(w.chain());
  EXPECT_EQ(w.order, (std::vector<std::size_t>{1, 0, 2}));
  EXPECT_EQ(w.consumers[1], std::vector<std::size_t>{0});
}

// Naming every layer and its input changes nothing: same parameters, outputs and gradients.
TEST(ModelGraph, ANamedChainEqualsThePlainList) {
  const std::vector<LayerSpec> plain{{.type = "conv2d", .out = 3, .padding = 1},
                                     {.type = "relu"},
                                     {.type = "flatten"},
                                     {.type = "linear", .out = 4}};
  std::vector<LayerSpec> named = plain;
  named[0].name = "a";
  named[1].name = "b";
  named[1].inputs = {"a"};
  named[2].name = "c";
  named[2].inputs = {"b"};
  named[3].inputs = {"c"};
  Model m1(plain, {2, 6, 6}, 4, 9);
  Model m2(named, {2, 6, 6}, 4, 9);
  EXPECT_EQ(weights_digest(m1), weights_digest(m2));
  Tensor in;
  in.resize({2, 2, 6, 6});
  Rng rng{1, 2};
  for (float& v : in.data) v = rng.uniform(-1.0f, 1.0f);
  const Tensor out1 = m1.forward(in);
  const Tensor out2 = m2.forward(in);
  EXPECT_EQ(out1.data, out2.data);
  m1.backward(out1);
  m2.backward(out2);
  EXPECT_TRUE(std::equal(m1.grads().begin(), m1.grads().end(), m2.grads().begin()));
}

TEST(ModelGraph, ACycleIsNamed) {
  expect_error({{.type = "conv2d", .out = 2, .padding = 1, .name = "a", .inputs = {"c"}},
                {.type = "relu", .name = "b", .inputs = {"a"}, .where = "m.toml:9:1"},
                {.type = "add", .name = "c", .inputs = {"b", "input"}},
                {.type = "flatten", .inputs = {"c"}},
                {.type = "linear", .out = 4}},
               {"form a cycle",
                "layer 0 (conv2d 'a') -> layer 1 (relu 'b' at m.toml:9:1) -> "
                "layer 2 (add 'c') -> layer 0 (conv2d 'a')"});
}

TEST(ModelGraph, AnUnknownInputIsNamedWithASuggestion) {
  expect_error(
      {{.type = "flatten", .name = "flat"},
       {.type = "linear", .out = 4, .inputs = {"flta"}, .where = "m.toml:7:1"}},
      {"layer 1 (linear at m.toml:7:1): input 'flta' is not the name of any layer", "flat"});
}

TEST(ModelGraph, AddOfDifferentShapesIsAnError) {
  expect_error({{.type = "conv2d", .out = 3, .padding = 1, .name = "a"},
                {.type = "conv2d", .out = 2, .padding = 1, .name = "b", .inputs = {"input"}},
                {.type = "add", .inputs = {"a", "b"}, .where = "m.toml:12:1"},
                {.type = "flatten"},
                {.type = "linear", .out = 4}},
               {"layer 2 (add at m.toml:12:1) adds inputs of different shapes: [3,6,6], [2,6,6]"});
}

TEST(ModelGraph, ConcatNeedsEqualSpatialShapes) {
  expect_error({{.type = "conv2d", .out = 3, .stride = 2, .padding = 1, .name = "a"},
                {.type = "concat", .inputs = {"a", "input"}},
                {.type = "flatten"},
                {.type = "linear", .out = 4}},
               {"layer 1 (concat) concatenates inputs whose shapes differ beyond the channels: "
                "[3,3,3], [2,6,6]"});
}

TEST(ModelGraph, OtherWiringErrors) {
  expect_error({{.type = "flatten", .name = "x"}, {.type = "linear", .out = 4, .name = "x"}},
               {"layer 1 (linear 'x'): the name 'x' is already taken by layer 0 (flatten 'x')"});
  expect_error({{.type = "flatten", .name = "f"},
                {.type = "linear", .out = 7},
                {.type = "linear", .out = 4, .inputs = {"f"}}},
               {"layer 1 (linear): no layer takes its output"});
  expect_error({{.type = "flatten", .name = "f"}, {.type = "add", .inputs = {"f"}}},
               {"layer 1 (add) takes two or more inputs, got 1"});
  expect_error(
      {{.type = "flatten", .name = "f"}, {.type = "linear", .out = 4, .inputs = {"f", "f"}}},
      {"layer 1 (linear) takes 1 input(s), got 2"});
}

TEST(ModelGraph, ConcatJoinsChannelsPerSample) {
  // Identity-like graph: the logits are a linear map of concat(input, input).
  const std::vector<LayerSpec> specs{{.type = "concat", .inputs = {"input", "input"}},
                                     {.type = "flatten"},
                                     {.type = "linear", .out = 4}};
  Model model(specs, {1, 2, 2}, 4, 3);
  EXPECT_EQ(model.param_infos()[0].shape, (std::vector<int>{4, 8}));
  Tensor in;
  in.resize({2, 1, 2, 2});
  for (std::size_t i = 0; i < in.size(); ++i) in.data[i] = static_cast<float>(i);
  model.forward(in);
  // Row 1 of the concat is [4,5,6,7, 4,5,6,7]: check through the summary's shape and a
  // hand-computed logit.
  const std::span<const float> w = model.params();
  float expected = w[8 * 4];  // bias of class 0
  for (int k = 0; k < 8; ++k) expected += w[k] * static_cast<float>(4 + k % 4);
  EXPECT_FLOAT_EQ(model.forward(in).data[4], expected);
}

}  // namespace
}  // namespace conflux::model

namespace conflux::model {
namespace {

// The observer sees every layer call, forward in execution order, backward in reverse, paired.
TEST(ModelGraph, AnObserverSeesEveryLayerCallInOrder) {
  struct Recorder final : LayerObserver {
    std::vector<std::string> calls;
    void begin(std::size_t i, bool backward) override {
      calls.push_back(fmt::format("{}{}", backward ? "b" : "f", i));
    }
    void end(std::size_t i, bool backward) override {
      calls.push_back(fmt::format("/{}{}", backward ? "b" : "f", i));
    }
  } recorder;
  const std::vector<LayerSpec> specs{
      {.type = "linear", .out = 4, .name = "head", .inputs = {"flat"}},
      {.type = "flatten", .name = "flat", .inputs = {"input"}},
      {.type = "linear", .out = 4, .inputs = {"head"}}};
  Model model(specs, {1, 2, 2}, 4, 1);
  model.set_observer(&recorder);
  Tensor in;
  in.resize({2, 1, 2, 2});
  std::fill(in.data.begin(), in.data.end(), 0.5f);
  const Tensor out = model.forward(in);
  model.backward(out);
  // The flatten below the first linear layer needs no backward pass.
  EXPECT_EQ(recorder.calls, (std::vector<std::string>{"f1", "/f1", "f0", "/f0", "f2", "/f2", "b2",
                                                      "/b2", "b0", "/b0"}));
}

}  // namespace
}  // namespace conflux::model
