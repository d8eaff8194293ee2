// The registry of layer types (model/layer_type.hpp): the one list of the built-in types.
// Each type is declared in its own file (src/model/<type>.cpp, `<type>_layer_type()`); this
// list is the only other place a new type is named. It also defines config's layer_keys(),
// which the loader reads: the schema declares what a layer table may hold, the types here say
// which tables exist (docs/design.md, "Adding a layer").

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "conflux/core/error.hpp"
#include "conflux/model/layer_type.hpp"

namespace conflux {
namespace model {

// Every built-in type, in documentation order (config reference, error messages).
#define CONFLUX_LAYER_TYPES(X) \
  X(linear)                    \
  X(conv2d)                    \
  X(maxpool)                   \
  X(avgpool)                   \
  X(globalavgpool)             \
  X(batchnorm)                 \
  X(dropout)                   \
  X(add)                       \
  X(concat)                    \
  X(relu)                      \
  X(flatten)

#define CONFLUX_DECLARE_LAYER_TYPE(name) const LayerType& name##_layer_type();
CONFLUX_LAYER_TYPES(CONFLUX_DECLARE_LAYER_TYPE)
#undef CONFLUX_DECLARE_LAYER_TYPE

std::span<const LayerType* const> layer_types() {
#define CONFLUX_LIST_LAYER_TYPE(name) &name##_layer_type(),
  static const std::array types{CONFLUX_LAYER_TYPES(CONFLUX_LIST_LAYER_TYPE)};
#undef CONFLUX_LIST_LAYER_TYPE
  return types;
}

const LayerType& layer_type(std::string_view name) {
  const auto types = layer_types();
  const auto it = std::find_if(types.begin(), types.end(),
                               [&](const LayerType* t) { return t->name() == name; });
  if (it != types.end()) return **it;
  std::vector<std::string> known;
  for (const LayerType* t : types) known.push_back(t->name());
  CONFLUX_INPUT_ERROR("unknown layer type '{}' (known types: {})", name, fmt::join(known, ", "));
}

}  // namespace model

const std::vector<LayerKeySpec>& layer_keys() {
  static const std::vector<LayerKeySpec> keys = [] {
    std::vector<LayerKeySpec> all;
    for (const model::LayerType* t : model::layer_types()) all.push_back(t->config);
    return all;
  }();
  return keys;
}

}  // namespace conflux
