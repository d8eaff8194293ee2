#include "conflux/config/schema.hpp"

#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "config_builder.hpp"

namespace conflux {
namespace {

constexpr double kIntMax = std::numeric_limits<int>::max();

// The `range` column of keys.hpp.
struct Range {
  std::optional<double> min, max;
  bool min_exclusive = false;
};
constexpr Range unbounded{};
constexpr Range in(double min, double max) {
  return {min, max, false};
}
constexpr Range above(double min, double max) {
  return {min, max, true};
}

// The TOML text of a `default` column: its C++ spelling, with a braced list in brackets.
std::string default_toml(std::string_view spelling) {
  if (spelling == "CONFLUX_REQUIRED") return "";
  if (spelling.starts_with("{")) {
    return fmt::format("[{}]", spelling.substr(1, spelling.size() - 2));
  }
  return std::string(spelling);
}

KeySpec key(std::string path, ValueType type, Range range, std::string_view default_spelling,
            std::vector<std::string> choices, std::string doc, KeyBinding binding) {
  return KeySpec{std::move(path),
                 type,
                 range.min,
                 range.max,
                 default_toml(default_spelling),
                 std::move(choices),
                 std::move(doc),
                 range.min_exclusive,
                 binding};
}

#define CONFLUX_UNPAREN(...) __VA_ARGS__
#define CONFLUX_SECTION_TYPE(section) \
  std::remove_cvref_t<decltype(std::declval<const Config&>().section())>
#define CONFLUX_SCHEMA_KEY(section, name, type, default_value, range, choices, doc)                \
  key(#section "." #name, value_type_of<type>(), range, #default_value, {CONFLUX_UNPAREN choices}, \
      doc, ConfigBuilder::member_binding<&CONFLUX_SECTION_TYPE(section)::name>()),
#define CONFLUX_SCHEMA_HOOKED(section, name, type, value_type, default_value, range, choices, doc) \
  key(#section "." #name, ValueType::value_type, range, #default_value, {CONFLUX_UNPAREN choices}, \
      doc, ConfigBuilder::section##_##name()),

std::vector<KeySpec> make_keys() {
  return {CONFLUX_ALL_KEYS(CONFLUX_SCHEMA_KEY, CONFLUX_SCHEMA_HOOKED)};
}

LayerKey layer_key(std::string name, int LayerSpec::*member, Range range, std::string default_text,
                   std::string doc) {
  return LayerKey{
      key(std::move(name), ValueType::kInt, range, default_text, {}, std::move(doc), KeyBinding{}),
      member};
}

LayerKey layer_key(std::string name, double LayerSpec::*member, Range range, std::string doc) {
  return LayerKey{key(std::move(name), ValueType::kFloat, range,
                      fmt::format("{}", LayerSpec{}.*member), {}, std::move(doc), KeyBinding{}),
                  member};
}

std::vector<LayerKeySpec> make_layer_keys() {
  const auto out = [](std::string doc) {
    return layer_key("out", &LayerSpec::out, in(1, 1 << 20), "", std::move(doc));
  };
  // A conv2d layer's defaults are LayerSpec's own.
  const auto conv2d_default = [](int LayerSpec::*member) {
    return fmt::format("{}", LayerSpec{}.*member);
  };
  return {
      {"linear", {out("Output features.")}, "Fully connected layer y = x W^T + b."},
      {"conv2d",
       {out("Output channels."),
        layer_key("kernel", &LayerSpec::kernel, in(1, 64), conv2d_default(&LayerSpec::kernel),
                  "Square kernel size."),
        layer_key("stride", &LayerSpec::stride, in(1, 64), conv2d_default(&LayerSpec::stride),
                  "Stride."),
        layer_key("padding", &LayerSpec::padding, in(0, 64), conv2d_default(&LayerSpec::padding),
                  "Zero padding on each side.")},
       "2-D convolution (im2col + OpenBLAS sgemm)."},
      {"maxpool",
       {layer_key("kernel", &LayerSpec::kernel, in(1, 64), "2", "Window size."),
        layer_key("stride", &LayerSpec::stride, in(0, 64), "0", "Stride; 0 = same as the window."),
        layer_key("padding", &LayerSpec::padding, in(0, 32), "0",
                  "Implicit -infinity padding on each side (never the maximum); at most half "
                  "the window, as in PyTorch.")},
       "Max pooling."},
      {"avgpool",
       {layer_key("kernel", &LayerSpec::kernel, in(1, 64), "2", "Window size."),
        layer_key("stride", &LayerSpec::stride, in(0, 64), "0", "Stride; 0 = same as the window.")},
       "Average pooling (no padding)."},
      {"globalavgpool", {}, "Mean of each channel: [C, H, W] to [C], before the classifier."},
      {"batchnorm",
       {layer_key("momentum", &LayerSpec::momentum, in(0, 1),
                  "Running statistics: running = (1 - momentum) * running + momentum * batch."),
        layer_key("eps", &LayerSpec::eps, above(0, 1), "Added to the variance.")},
       "Batch normalisation per channel of [C, H, W] (BatchNorm2d) or per feature of [F] "
       "(BatchNorm1d), with learned scale and shift; training uses the statistics of the "
       "global batch over all trainers (docs/training.md), evaluation the running ones."},
      {"dropout",
       {layer_key("rate", &LayerSpec::rate, in(0, 0.999999), "Probability of zeroing an element.")},
       "Inverted dropout in training (kept elements scaled by 1 / (1 - rate)), identity in "
       "evaluation; the mask is drawn from (run.seed, layer, step, sample)."},
      {"add", {}, "Element-wise sum of two or more inputs of one shape (skip connections)."},
      {"concat", {}, "Concatenation of two or more inputs along the channels (or features)."},
      {"relu", {}, "Rectified linear unit."},
      {"flatten", {}, "Flattens [C, H, W] to [C*H*W] before linear layers."},
  };
}

std::string format_bound(double v, ValueType type) {
  if (v == kIntMax) return "inf";
  return type == ValueType::kInt ? fmt::format("{}", static_cast<long long>(v))
                                 : fmt::format("{}", v);
}

std::string shown_default(const KeySpec& k) {
  return k.default_toml.empty() ? "**required**" : "`" + k.default_toml + "`";
}

}  // namespace

const std::vector<KeySpec>& config_keys() {
  static const std::vector<KeySpec> keys = make_keys();
  return keys;
}

double LayerKey::get(const LayerSpec& spec) const {
  return std::visit([&](auto m) { return static_cast<double>(spec.*m); }, member);
}

void LayerKey::set(LayerSpec& spec, double value) const {
  std::visit([&](auto m) { spec.*m = static_cast<std::remove_cvref_t<decltype(spec.*m)>>(value); },
             member);
}

std::string LayerKey::text(const LayerSpec& spec) const {
  return std::visit([&](auto m) { return fmt::format("{}", spec.*m); }, member);
}

const std::vector<LayerKeySpec>& layer_keys() {
  static const std::vector<LayerKeySpec> keys = make_layer_keys();
  return keys;
}

const KeySpec* find_key(std::string_view path) {
  for (const auto& k : config_keys())
    if (k.path == path) return &k;
  return nullptr;
}

const std::vector<std::string>& key_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> all;
    for (const auto& k : config_keys()) all.push_back(k.path);
    all.push_back("model.layers");
    return all;
  }();
  return paths;
}

std::string_view section_of(std::string_view path) {
  return path.substr(0, path.find('.'));
}

std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "an integer";
    case ValueType::kFloat:
      return "a number";
    case ValueType::kBool:
      return "a boolean";
    case ValueType::kString:
      return "a string";
    case ValueType::kFloatList:
      return "a list of numbers";
    case ValueType::kFloatOrAuto:
      return "\"auto\" or a number";
  }
  return "a value";
}

std::string describe_expected(const KeySpec& spec) {
  std::string text(type_name(spec.type));
  if (!spec.choices.empty()) {
    text += " (one of";
    for (std::size_t i = 0; i < spec.choices.size(); ++i)
      text += fmt::format("{} \"{}\"", i ? "," : "", spec.choices[i]);
    text += ")";
  }
  if (spec.min && spec.max) {
    text += fmt::format(" in {}{}, {}]", spec.min_exclusive ? "(" : "[",
                        format_bound(*spec.min, spec.type), format_bound(*spec.max, spec.type));
  } else if (spec.min) {
    text += fmt::format(" >= {}", format_bound(*spec.min, spec.type));
  }
  if (spec.type == ValueType::kFloatList && spec.min) text.insert(0, "each entry of ");
  return text;
}

std::string config_reference_markdown() {
  std::string md = "| key | type and range | default | meaning |\n|---|---|---|---|\n";
  for (const auto& k : config_keys()) {
    md += fmt::format("| `{}` | {} | {} | {} |\n", k.path, describe_expected(k), shown_default(k),
                      k.doc);
  }
  md +=
      "\n### `[[model.layers]]`\n\nThe model is a list of layer tables in order; each has a "
      "`type` and the keys of its type. The input shape comes from the dataset; the last layer "
      "must produce one output per class. Every layer may also have a `name` (a string other "
      "layers refer to) and `inputs` (a list of names whose outputs it takes; `\"input\"` is "
      "the model's input); without `inputs` a layer takes the previous layer's output. A layer "
      "table with `type = \"block\"` repeats a block of `[[model.blocks.NAME]]` layer tables "
      "(docs/models.md).\n\n| type | key | type and range | default | meaning "
      "|\n|---|---|---|---|---|\n";
  for (const auto& layer : layer_keys()) {
    md += fmt::format("| `{}` | | | | {} |\n", layer.type, layer.doc);
    for (const auto& k : layer.keys) {
      md += fmt::format("| | `{}` | {} | {} | {} |\n", k.path, describe_expected(k),
                        shown_default(k), k.doc);
    }
  }
  return md;
}

}  // namespace conflux
