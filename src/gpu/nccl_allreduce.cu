#include "conflux/gpu/nccl_allreduce.hpp"

#include <nccl.h>

#include <cstring>
#include <exception>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/handles.hpp"

namespace conflux::gpu {

struct NcclAllreduce::Impl {
  gpu::NcclCommunicator comm;
  int size = 0;
};

NcclAllreduce::NcclAllreduce(const comm::Communicator& trainers) {
  // Trainer 0 creates the id. When that fails it broadcasts an empty id, so that no trainer is
  // left waiting in the broadcast, and rethrows its own error afterwards.
  std::string id_bytes;
  std::exception_ptr error;
  if (trainers.rank() == 0) {
    try {
      ncclUniqueId id;
      CONFLUX_NCCL_CHECK(ncclGetUniqueId(&id));
      id_bytes.assign(reinterpret_cast<const char*>(&id), sizeof id);
    } catch (...) {
      error = std::current_exception();
      id_bytes.clear();
    }
  }
  id_bytes = trainers.broadcast(id_bytes, 0);
  if (error) std::rethrow_exception(error);
  CONFLUX_CHECK(id_bytes.size() == sizeof(ncclUniqueId),
                "NCCL: trainer 0 could not create the communicator's unique id (see its error)");
  ncclUniqueId id;
  std::memcpy(&id, id_bytes.data(), sizeof id);
  impl_ = std::make_unique<Impl>(
      Impl{gpu::NcclCommunicator(trainers.size(), id, trainers.rank()), trainers.size()});
}

NcclAllreduce::NcclAllreduce(NcclAllreduce&&) noexcept = default;
NcclAllreduce& NcclAllreduce::operator=(NcclAllreduce&&) noexcept = default;
NcclAllreduce::~NcclAllreduce() = default;

int NcclAllreduce::size() const noexcept {
  return impl_->size;
}

void NcclAllreduce::sum_async(float* device_data, std::size_t count, CUstream_st* stream) {
  if (count == 0) return;
  CONFLUX_NCCL_CHECK(ncclAllReduce(device_data, device_data, count, ncclFloat, ncclSum,
                                   impl_->comm.get(), stream));
}

}  // namespace conflux::gpu
