// [[model.layers]] tables to LayerSpecs: each layer's type and keys checked against the schema,
// block instances expanded with their arguments substituted.

#include "layer_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "conflux/config/schema.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/suggest.hpp"
#include "key_values.hpp"

namespace conflux {
namespace {

// The name that stands for the enclosing scope's input (the model's, or a block instance's).
constexpr const char* kInputName = kModelInputName;
// Keys every layer table may have besides those of its type.
const std::vector<std::string> kGraphKeys = {"type", "name", "inputs"};
// Keys of a block instance besides its arguments.
const std::vector<std::string> kInstanceKeys = {"type", "block", "repeat", "name", "inputs"};

// A block instance being expanded: its arguments and how its inputs are named.
struct Instance {
  const toml::table* table = nullptr;
  std::string label;                           // e.g. "model.layers[3]"
  std::string scope;                           // name prefix of this repetition
  std::string input;                           // what "input" means inside it
  std::set<std::string>* used_args = nullptr;  // the arguments the block read
};

class LayerReader {
 public:
  LayerReader(const toml::table& root, std::string source_name, const Locate& locate)
      : root_(root), source_name_(std::move(source_name)), locate_(locate) {}

  std::vector<LayerSpec> read() {
    const toml::array& layers = layer_list(root_.at_path("model.layers").node(), "model.layers");
    check_block_names();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const toml::table& table = *layers.at(i).as_table();
      const std::string label = fmt::format("model.layers[{}]", i);
      if (is_block(table)) {
        expand_instance(table, label, i);
      } else {
        specs_.push_back(read_layer(table, label, nullptr));
      }
    }
    resolve_aliases();
    return std::move(specs_);
  }

 private:
  [[noreturn]] void fail_at(const toml::source_region& where, const std::string& message) const {
    CONFLUX_INPUT_ERROR("{}: {}", locate_(where), message);
  }

  // A non-empty array of tables at `node`, else an error naming `path`.
  const toml::array& layer_list(const toml::node* node, const std::string& path) const {
    if (node == nullptr) {
      CONFLUX_INPUT_ERROR(
          "{}: missing required key '{}' (a list of [[{}]] tables, e.g. type = \"linear\", "
          "out = 10)",
          source_name_, path, path);
    }
    const toml::array* list = node->as_array();
    if (list == nullptr || !list->is_array_of_tables() || list->empty()) {
      fail_at(node->source(),
              fmt::format("{}: expected a non-empty list of [[{}]] tables", path, path));
    }
    return *list;
  }

  static bool is_block(const toml::table& table) {
    const toml::node* type = table.get("type");
    return type != nullptr && type->value<std::string>() == "block";
  }

  const toml::table* blocks() const { return root_.at_path("model.blocks").as_table(); }

  // model.blocks holds only lists of layer tables.
  void check_block_names() const {
    const toml::node* node = root_.at_path("model.blocks").node();
    if (node == nullptr) return;
    if (node->as_table() == nullptr) {
      fail_at(node->source(), "model.blocks: expected tables [[model.blocks.NAME]] of layers");
    }
    for (const auto& [name, list] : *blocks()) {
      const toml::array& layers = layer_list(&list, fmt::format("model.blocks.{}", name.str()));
      for (const auto& layer : layers) {
        if (is_block(*layer.as_table())) {
          fail_at(layer.source(),
                  fmt::format("model.blocks.{}: a block cannot contain a block", name.str()));
        }
      }
    }
  }

  // The spec of a layer table's type; InputError for a missing or unknown type.
  const LayerKeySpec& layer_type(const toml::table& table, const std::string& label) const {
    std::vector<std::string> types;
    for (const auto& l : layer_keys()) types.push_back(l.type);
    types.push_back("block");
    const toml::node* type_node = table.get("type");
    if (type_node == nullptr || !type_node->is_string()) {
      fail_at(table.source(),
              fmt::format("{}: missing 'type' (one of {})", label, fmt::join(types, ", ")));
    }
    const std::string type = *type_node->value<std::string>();
    const auto spec = std::find_if(layer_keys().begin(), layer_keys().end(),
                                   [&](const auto& l) { return l.type == type; });
    if (spec == layer_keys().end()) {
      fail_at(type_node->source(),
              fmt::format("{}.type: unknown layer type \"{}\"{} (known: {})", label, type,
                          did_you_mean(type, types), fmt::join(types, ", ")));
    }
    return *spec;
  }

  void check_keys(const toml::table& table, std::vector<std::string> allowed,
                  const std::string& what, const std::string& label) const {
    for (const auto& [key, value] : table) {
      const std::string name(key.str());
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
      fail_at(key.source(),
              fmt::format("{}: key '{}' is not valid for {}{} (valid: {})", label, name, what,
                          did_you_mean(name, allowed), fmt::join(allowed, ", ")));
    }
  }

  // A layer key's node, with a "$ARG" string replaced by the instance's argument.
  const toml::node* key_value(const toml::node* value, const Instance* instance,
                              const std::string& label) const {
    if (value == nullptr || !value->is_string()) return value;
    const std::string text = *value->value<std::string>();
    if (!text.starts_with("$")) return value;
    if (instance == nullptr) {
      fail_at(value->source(), fmt::format("{}: \"{}\" refers to a block argument, but the "
                                           "layer is not in a block",
                                           label, text));
    }
    const toml::node* arg = instance->table->get(text.substr(1));
    if (arg == nullptr || std::find(kInstanceKeys.begin(), kInstanceKeys.end(), text.substr(1)) !=
                              kInstanceKeys.end()) {
      fail_at(value->source(),
              fmt::format("{}: argument '{}' is not given by the block instance {} at {}", label,
                          text.substr(1), instance->label, locate_(instance->table->source())));
    }
    instance->used_args->insert(text.substr(1));
    return arg;
  }

  // One layer table: every key of its type, given (or a block argument) or defaulted.
  LayerSpec read_layer(const toml::table& table, const std::string& label,
                       const Instance* instance) {
    const LayerKeySpec& spec = layer_type(table, label);
    std::vector<std::string> allowed = kGraphKeys;
    for (const auto& k : spec.keys) allowed.push_back(k.path);
    check_keys(table, allowed, fmt::format("a {} layer", spec.type), label);
    LayerSpec layer;
    layer.type = spec.type;
    layer.where = locate_(table.source());
    for (const LayerKey& k : spec.keys) {
      const toml::node* value = key_value(table.get(k.path), instance, label);
      if (value == nullptr && k.default_toml.empty()) {
        fail_at(table.source(),
                fmt::format("{}: a {} layer needs '{}' ({})", label, spec.type, k.path, k.doc));
      }
      if (value == nullptr) {
        k.set(layer, to_double(*default_node(k)));
        continue;
      }
      check_value(*value, k, fmt::format("{}.{}", label, k.path), locate_(value->source()));
      k.set(layer, to_double(*value));
    }
    if (spec.complete != nullptr) spec.complete(layer);
    read_wiring(table, label, instance, layer);
    return layer;
  }

  static double to_double(const toml::node& node) {
    if (const auto i = node.value_exact<std::int64_t>()) return static_cast<double>(*i);
    return *node.value<double>();
  }

  const toml::node* default_node(const KeySpec& spec) {
    defaults_ =
        toml::parse(std::string_view("v = " + spec.default_toml), std::string_view("default"));
    return defaults_.get("v");
  }

  // A name a layer or instance gives itself: not the input's, no '$'.
  std::string own_name(const toml::table& table, const std::string& label) const {
    const toml::node* node = table.get("name");
    if (node == nullptr) return "";
    const auto name = node->value_exact<std::string>();
    if (!name || name->empty() || *name == kInputName || name->find('$') != std::string::npos) {
      fail_at(node->source(), fmt::format("{}.name: expected a non-empty string other than "
                                          "\"{}\" and without '$'",
                                          label, kInputName));
    }
    return *name;
  }

  // The names in a table's `inputs` list.
  std::vector<std::string> input_names(const toml::table& table, const std::string& label) const {
    const toml::node* node = table.get("inputs");
    if (node == nullptr) return {};
    const toml::array* list = node->as_array();
    std::vector<std::string> names;
    if (list != nullptr) {
      for (const auto& element : *list) {
        if (const auto name = element.value_exact<std::string>()) names.push_back(*name);
      }
    }
    if (list == nullptr || list->empty() || names.size() != list->size()) {
      fail_at(node->source(),
              fmt::format("{}.inputs: expected a non-empty list of layer names", label));
    }
    return names;
  }

  // The layer's name and inputs, scoped to the block repetition it is in.
  void read_wiring(const toml::table& table, const std::string& label, const Instance* instance,
                   LayerSpec& layer) {
    const std::string name = own_name(table, label);
    std::vector<std::string> inputs = input_names(table, label);
    if (instance == nullptr) {
      layer.name = name;
      layer.inputs = std::move(inputs);
      return;
    }
    layer.name = fmt::format("{}.{}", instance->scope, name.empty() ? label_index(label) : name);
    for (std::string& input : inputs) {
      input = input == kInputName ? instance->input : fmt::format("{}.{}", instance->scope, input);
    }
    layer.inputs = std::move(inputs);
  }

  static std::string label_index(const std::string& label) {
    return label.substr(label.rfind('[') + 1, label.size() - label.rfind('[') - 2);
  }

  // The name of the flat layer before the next one, naming it if it has none.
  std::string name_previous() {
    if (specs_.empty()) return kInputName;
    LayerSpec& previous = specs_.back();
    if (previous.name.empty()) previous.name = fmt::format("layer{}", specs_.size() - 1);
    return previous.name;
  }

  // A block instance: its block's layers `repeat` times, each repetition fed by the last.
  void expand_instance(const toml::table& table, const std::string& label, std::size_t index) {
    const toml::node* block_node = table.get("block");
    const auto block = block_node ? block_node->value_exact<std::string>() : std::nullopt;
    std::vector<std::string> known;
    if (blocks() != nullptr)
      for (const auto& [name, list] : *blocks()) known.emplace_back(name.str());
    if (!block || blocks() == nullptr || !blocks()->contains(*block)) {
      fail_at(block_node ? block_node->source() : table.source(),
              fmt::format("{}.block: expected the name of a [[model.blocks.NAME]] list{} "
                          "(defined: {})",
                          label, block ? did_you_mean(*block, known) : "",
                          known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    }
    const std::int64_t repeat = repeat_count(table, label);
    const std::string scope =
        own_name(table, label).empty() ? fmt::format("block{}", index) : own_name(table, label);
    const std::vector<std::string> inputs = input_names(table, label);
    if (inputs.size() > 1) {
      fail_at(table.get("inputs")->source(),
              fmt::format("{}.inputs: a block instance takes one input", label));
    }
    std::set<std::string> used_args;
    const toml::array& layers = *blocks()->get(*block)->as_array();
    for (std::int64_t r = 0; r < repeat; ++r) {
      Instance instance{&table, label, fmt::format("{}.{}", scope, r), "", &used_args};
      instance.input = r == 0 && !inputs.empty() ? inputs[0] : name_previous();
      for (std::size_t j = 0; j < layers.size(); ++j) {
        LayerSpec layer = read_layer(*layers.at(j).as_table(),
                                     fmt::format("model.blocks.{}[{}]", *block, j), &instance);
        // The first layer of a repetition takes the instance's input unless it names its own.
        if (j == 0 && layer.inputs.empty() && r == 0 && !inputs.empty()) layer.inputs = inputs;
        layer.where += fmt::format(" (block instance {} at {})", label, locate_(table.source()));
        specs_.push_back(std::move(layer));
      }
    }
    check_args_used(table, label, *block, used_args);
    aliases_[scope] = specs_.back().name;  // block layers are always named
  }

  std::int64_t repeat_count(const toml::table& table, const std::string& label) const {
    const toml::node* node = table.get("repeat");
    if (node == nullptr) return 1;
    const auto repeat = node->value_exact<std::int64_t>();
    if (!repeat || *repeat < 1 || *repeat > 1024) {
      fail_at(node->source(), fmt::format("{}.repeat: expected an integer in [1, 1024]", label));
    }
    return *repeat;
  }

  void check_args_used(const toml::table& table, const std::string& label, const std::string& block,
                       const std::set<std::string>& used) const {
    for (const auto& [key, value] : table) {
      const std::string name(key.str());
      if (std::find(kInstanceKeys.begin(), kInstanceKeys.end(), name) != kInstanceKeys.end() ||
          used.contains(name)) {
        continue;
      }
      fail_at(key.source(), fmt::format("{}: argument '{}' is not used by block '{}' (its "
                                        "layers refer to arguments as \"${}\")",
                                        label, name, block, name));
    }
  }

  // A reference to a block instance's name means its output (its last layer).
  void resolve_aliases() {
    for (LayerSpec& layer : specs_) {
      for (std::string& input : layer.inputs) {
        if (const auto it = aliases_.find(input); it != aliases_.end()) input = it->second;
      }
    }
  }

  const toml::table& root_;
  std::string source_name_;
  const Locate& locate_;
  toml::table defaults_;  // the parsed default default_node() handed out last
  std::vector<LayerSpec> specs_;
  std::map<std::string, std::string> aliases_;  // block instance name -> its output's name
};

}  // namespace

std::vector<LayerSpec> read_model_layers(const toml::table& root, const std::string& source_name,
                                         const Locate& locate) {
  return LayerReader(root, source_name, locate).read();
}

}  // namespace conflux
