// The GPU compute backend in the CPU-only build (make CUDA=0): there is none.

#include "conflux/core/error.hpp"
#include "conflux/train/compute_backend.hpp"

namespace conflux::train {

std::unique_ptr<ComputeBackend> make_gpu_backend(model::Model /*model*/,
                                                 const BackendOptions& /*options*/) {
  CONFLUX_RUNTIME_ERROR(
      "GPU trainer: built without CUDA (rebuild with make CUDA=1, see docs/gpu.md)");
}

}  // namespace conflux::train
