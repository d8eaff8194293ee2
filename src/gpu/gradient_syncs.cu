// The GPU trainers' gradient exchanges (gpu/gradient_syncs.hpp).

#include <nccl.h>

#include <cstring>
#include <exception>
#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/gradient_syncs.hpp"
#include "conflux/gpu/handles.hpp"

namespace conflux::gpu {
namespace {

// The communicator's unique id, created by trainer 0 and broadcast over MPI. When trainer 0
// cannot create it, it broadcasts an empty id, so that no trainer is left waiting in the
// broadcast, and rethrows its own error afterwards.
ncclUniqueId shared_unique_id(const comm::Communicator& trainers) {
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
  return id;
}

class NcclSync final : public comm::GradientSync {
 public:
  NcclSync(const comm::Communicator& trainers, cudaStream_t stream)
      : comm_(trainers.size(), shared_unique_id(trainers), trainers.rank()), stream_(stream) {}
  std::string name() const override { return "nccl-allreduce"; }
  void sum(std::span<float> gradients) override {
    if (gradients.empty()) return;
    CONFLUX_NCCL_CHECK(ncclAllReduce(gradients.data(), gradients.data(), gradients.size(),
                                     ncclFloat, ncclSum, comm_.get(), stream_));
  }

 private:
  NcclCommunicator comm_;
  cudaStream_t stream_;
};

class HostStagedSync final : public comm::GradientSync {
 public:
  HostStagedSync(std::unique_ptr<comm::GradientSync> host, std::size_t count, cudaStream_t stream)
      : host_(std::move(host)), staged_(count), stream_(stream) {}
  std::string name() const override {
    return host_->name() + " (GPU gradients staged through host memory)";
  }
  void sum(std::span<float> gradients) override {
    download(gradients);
    host_->sum(staged_.span());
    upload(gradients);
  }
  comm::Merged exchange(std::span<float> gradients) override {
    download(gradients);
    const comm::Merged merged = host_->exchange(staged_.span());
    if (merged != comm::Merged::kNone) upload(gradients);
    return merged;
  }
  bool drain(std::span<float> gradients) override {
    if (!host_->drain(staged_.span())) return false;
    upload(gradients);
    return true;
  }
  void progress() override { host_->progress(); }

 private:
  void download(std::span<const float> device) {
    CONFLUX_CHECK(device.size() == staged_.size(), "host-staged sync: {} gradients, staging {}",
                  device.size(), staged_.size());
    copy_to_host(staged_.data(), device.data(), device.size(), stream_);
    CONFLUX_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the backward pass, then the copy
  }
  void upload(std::span<float> device) {
    copy_to_device(device.data(), staged_.data(), device.size(), stream_);
    // staged_ is reused by the next exchange: the copy must have read it by then.
    CONFLUX_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  std::unique_ptr<comm::GradientSync> host_;
  PinnedBuffer<float> staged_;
  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<comm::GradientSync> make_nccl_sync(const comm::Communicator& trainers,
                                                   CUstream_st* stream) {
  return std::make_unique<NcclSync>(trainers, stream);
}

std::unique_ptr<comm::GradientSync> make_host_staged_sync(std::unique_ptr<comm::GradientSync> host,
                                                          std::size_t count, CUstream_st* stream) {
  return std::make_unique<HostStagedSync>(std::move(host), count, stream);
}

}  // namespace conflux::gpu
