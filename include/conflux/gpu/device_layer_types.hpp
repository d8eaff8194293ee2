#pragma once
/// @file device_layer_types.hpp
/// Which layer types have device (GPU) kernels: the one list, read by the device choice (to
/// refuse a model the GPU cannot run, naming the layer) and by the kernel factory
/// (device_layers.hpp). The CPU half of each type is model's layer registry.

#include <string>
#include <string_view>
#include <vector>

#include "conflux/config/layer_spec.hpp"

namespace conflux::gpu {

/// Every layer type with device kernels: X(type name, kernel class in gpu::kernels).
#define CONFLUX_DEVICE_LAYER_TYPES(X)   \
  X(linear, LinearKernel)               \
  X(conv2d, Conv2dKernel)               \
  X(maxpool, MaxPoolKernel)             \
  X(avgpool, AvgPoolKernel)             \
  X(globalavgpool, GlobalAvgPoolKernel) \
  X(batchnorm, BatchNormKernel)         \
  X(dropout, DropoutKernel)             \
  X(add, AddKernel)                     \
  X(concat, ConcatKernel)               \
  X(relu, ReluKernel)                   \
  X(flatten, FlattenKernel)

/// True when layers of `type` have device kernels.
inline bool has_device_kernels(std::string_view type) {
#define CONFLUX_IS_DEVICE_LAYER_TYPE(name, kernel) \
  if (type == #name) return true;
  CONFLUX_DEVICE_LAYER_TYPES(CONFLUX_IS_DEVICE_LAYER_TYPE)
#undef CONFLUX_IS_DEVICE_LAYER_TYPE
  return false;
}

/// Index of the first layer of `specs` without device kernels, or -1 when the GPU runs all.
inline int first_layer_without_device_kernels(const std::vector<LayerSpec>& specs) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!has_device_kernels(specs[i].type)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace conflux::gpu
