// gpu::NcclAllreduce in the CPU-only build (make CUDA=0): the constructor throws, so no object
// exists and the other members are unreachable; they are defined so that callers link in both
// builds.

#include "conflux/core/error.hpp"
#include "conflux/gpu/nccl_allreduce.hpp"

namespace conflux::gpu {

struct NcclAllreduce::Impl {};

NcclAllreduce::NcclAllreduce(const comm::Communicator& /*trainers*/) {
  CONFLUX_RUNTIME_ERROR(
      "NCCL allreduce: built without CUDA (rebuild with make CUDA=1, see docs/gpu.md)");
}
NcclAllreduce::NcclAllreduce(NcclAllreduce&&) noexcept = default;
NcclAllreduce& NcclAllreduce::operator=(NcclAllreduce&&) noexcept = default;
NcclAllreduce::~NcclAllreduce() = default;

int NcclAllreduce::size() const noexcept {
  return 0;
}

void NcclAllreduce::sum_async(float* /*device_data*/, std::size_t /*count*/,
                              CUstream_st* /*stream*/) {
  CONFLUX_RUNTIME_ERROR(
      "NCCL allreduce: built without CUDA (rebuild with make CUDA=1, see docs/gpu.md)");
}

}  // namespace conflux::gpu
