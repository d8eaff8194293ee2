#include "conflux/train/transform_setup.hpp"

#include "conflux/core/error.hpp"

namespace conflux::train {

data::TransformOptions transform_options(const Config& config) {
  const auto& t = config.transform();
  data::TransformOptions o;
  static_cast<TransformSection&>(o) = t;
  if (!t.plugin.empty()) {
    try {
      o.loaded_plugin = data::TransformPlugin::load(t.plugin, t.plugin_args);
    } catch (const InputError& e) {
      CONFLUX_INPUT_ERROR("{}: {}", config.where("transform.plugin"), e.what());
    }
  }
  return o;
}

data::SampleTransform make_transform(const Config& config, const data::Dataset& dataset) {
  try {
    return data::SampleTransform(transform_options(config), dataset.shape);
  } catch (const InputError& e) {
    // The message names the offending key; point at where that key was set.
    const std::string message = e.what();
    const auto at = message.find("transform.");
    const auto end = message.find_first_not_of("abcdefghijklmnopqrstuvwxyz_.", at);
    const std::string key =
        at == std::string::npos ? "transform.crop" : message.substr(at, end - at);
    CONFLUX_INPUT_ERROR("{}: {}", config.where(key), message);
  }
}

}  // namespace conflux::train
