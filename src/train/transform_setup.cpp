#include "conflux/train/transform_setup.hpp"

#include "conflux/core/error.hpp"

namespace conflux::train {

data::TransformOptions transform_options(const Config& config) {
  const auto& t = config.transform();
  data::TransformOptions o;
  o.pad = t.pad;
  o.crop = t.crop;
  o.hflip = t.hflip;
  o.mean = t.mean;
  o.std = t.std;
  o.resized_crop = t.resized_crop;
  o.resized_crop_scale_min = t.resized_crop_scale_min;
  o.resized_crop_scale_max = t.resized_crop_scale_max;
  o.resized_crop_ratio_min = t.resized_crop_ratio_min;
  o.resized_crop_ratio_max = t.resized_crop_ratio_max;
  o.rotation_degrees = t.rotation_degrees;
  o.brightness = t.brightness;
  o.contrast = t.contrast;
  o.saturation = t.saturation;
  o.blur_kernel = t.blur_kernel;
  o.blur_sigma_min = t.blur_sigma_min;
  o.blur_sigma_max = t.blur_sigma_max;
  o.blur_probability = t.blur_probability;
  o.cutout_size = t.cutout_size;
  o.cutout_probability = t.cutout_probability;
  if (!t.plugin.empty()) {
    try {
      o.plugin = data::TransformPlugin::load(t.plugin, t.plugin_args);
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
