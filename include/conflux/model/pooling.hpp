#pragma once
/// @file pooling.hpp
/// The window geometry maxpool and avgpool share: floor (a partial last window is dropped, as in
/// PyTorch), stride 0 meaning the kernel, padding on each side (maxpool only; avgpool has none).

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// The stride of a pooling window: 0 means the kernel (non-overlapping windows).
inline int pool_stride(int kernel, int stride) noexcept {
  return stride == 0 ? kernel : stride;
}

/// LayerKeySpec::complete of maxpool and avgpool: a stride of 0 becomes the window.
void complete_pool_stride(LayerSpec& spec);

/// [C, H', W'] with H' = (H + 2 padding - kernel) / stride + 1 for an image [C, H, W];
/// InputError when the input is not an image or the window does not fit the padded input.
SampleShape pooled_shape(int kernel, int stride, int padding, const SampleShape& input);

}  // namespace conflux::model
