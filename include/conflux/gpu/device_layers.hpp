#pragma once
/// @file device_layers.hpp
/// The device kernels of every layer type (device_layer_types.hpp names them), and the factory
/// the device model builds its layers with.

#include <fmt/format.h>

#include <memory>

#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layer.hpp"
#include "conflux/gpu/device_layer_types.hpp"
#include "conflux/gpu/kernels/batchnorm.hpp"
#include "conflux/gpu/kernels/conv2d.hpp"
#include "conflux/gpu/kernels/elementwise.hpp"
#include "conflux/gpu/kernels/linear.hpp"
#include "conflux/gpu/kernels/pooling.hpp"

namespace conflux::gpu {

/// The device kernels of layer `s`; InputError naming the type when it has none.
template <class Ex>
std::unique_ptr<DeviceLayer<Ex>> make_device_layer(const DeviceLayerSpec& s) {
#define CONFLUX_MAKE_DEVICE_LAYER(name, kernel) \
  if (s.spec->type == #name) return std::make_unique<kernels::kernel<Ex>>(s);
  CONFLUX_DEVICE_LAYER_TYPES(CONFLUX_MAKE_DEVICE_LAYER)
#undef CONFLUX_MAKE_DEVICE_LAYER
  CONFLUX_INPUT_ERROR("layer type '{}' has no GPU kernel", s.spec->type);
}

}  // namespace conflux::gpu
