#pragma once
// The scratch that a model's oneDNN convolutions share (src/model/onednn_conv). Apart from
// onednn_conv.hpp so that Model, which makes it, does not include oneDNN's headers. Private
// to src/model.

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace conflux::model {

/// A buffer aligned to 64 bytes (whole vectors for oneDNN's kernels) that only grows.
class AlignedBuffer {
 public:
  /// At least `bytes`; the contents are undefined after growing.
  void* get(std::size_t bytes);

 private:
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  std::size_t bytes_ = 0;
};

/// Batch-sized scratch for the blocked copies of one layer call's tensors. Layers run one at a
/// time, so the convolutions of one model share one (Model makes it): three activation-sized
/// buffers (and a gated gradient) for the whole model rather than per layer.
struct ConvWorkspace {
  AlignedBuffer a, b, c;
  AlignedBuffer gated;  ///< the output gradient gated by a fused ReLU, in NCHW
};

}  // namespace conflux::model
