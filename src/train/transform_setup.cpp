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

namespace {

// The transform's options do not fit the images: the message names the offending key, so
// point at where that key was set.
[[noreturn]] void rethrow_at_key(const Config& config, const InputError& e) {
  const std::string message = e.what();
  const auto at = message.find("transform.");
  const auto end = message.find_first_not_of("abcdefghijklmnopqrstuvwxyz_.", at);
  const std::string key = at == std::string::npos ? "transform.crop" : message.substr(at, end - at);
  CONFLUX_INPUT_ERROR("{}: {}", config.where(key), message);
}

}  // namespace

data::SampleTransform make_transform(const Config& config, const data::SampleSource& source) {
  try {
    return data::SampleTransform(transform_options(config), source.info().shape);
  } catch (const InputError& e) {
    rethrow_at_key(config, e);
  }
}

data::ImageShape transformed_shape(const Config& config, data::ImageShape image) {
  // Without the plugin: it keeps the shape, and it may exist only where the job runs.
  data::TransformOptions options;
  static_cast<TransformSection&>(options) = config.transform();
  try {
    return data::SampleTransform(options, image).output_shape();
  } catch (const InputError& e) {
    rethrow_at_key(config, e);
  }
}

}  // namespace conflux::train
