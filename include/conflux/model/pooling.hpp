#pragma once
/// @file pooling.hpp
/// The window geometry maxpool and avgpool share: no padding, floor (a partial last window is
/// dropped, as in PyTorch), stride 0 meaning the kernel.

#include "conflux/model/layer.hpp"

namespace conflux::model {

/// The stride of a pooling window: 0 means the kernel (non-overlapping windows).
inline int pool_stride(int kernel, int stride) noexcept {
  return stride == 0 ? kernel : stride;
}

/// [C, H', W'] with H' = (H - kernel) / stride + 1 for an image [C, H, W]; InputError when the
/// input is not an image or the window does not fit it.
SampleShape pooled_shape(int kernel, int stride, const SampleShape& input);

}  // namespace conflux::model
