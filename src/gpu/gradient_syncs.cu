// The GPU trainers' gradient exchanges (gpu/gradient_syncs.hpp).

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/device_layer.hpp"
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

// ncclAllReduce(sum) in place. With buckets announced during backward (gradients_ready), each
// is summed on a communication stream of its own as soon as the compute stream has produced it,
// overlapping the rest of backward; exchange() sums what was not announced and makes the compute
// stream wait for the communication stream before the optimiser step. Every trainer announces
// the same buckets in the same order (one model), as NCCL requires of one communicator.
class NcclSync final : public NcclSums {
 public:
  NcclSync(const comm::Communicator& trainers, cudaStream_t compute)
      : comm_(trainers.size(), shared_unique_id(trainers), trainers.rank()), compute_(compute) {}
  ~NcclSync() override {
    try {
      side_.synchronize();  // nothing in flight may outlive the communicator
    } catch (...) {         // a destructor must not throw; the error was reported where it happened
    }
  }
  NcclSync(const NcclSync&) = delete;
  NcclSync& operator=(const NcclSync&) = delete;

  std::string name() const override { return "nccl-allreduce"; }
  void sum(std::span<float> gradients) override {
    all_reduce(gradients.data(), gradients.size(), compute_);
  }
  void gradients_ready(std::span<float> gradients, comm::GradientRange range) override {
    CONFLUX_CHECK(range.begin <= range.end && range.end <= gradients.size(),
                  "NCCL: bucket [{}, {}) outside {} gradients", range.begin, range.end,
                  gradients.size());
    follow_compute();
    all_reduce(gradients.data() + range.begin, range.size(), side_.get());
    issued_.push_back(range);
  }
  // Batch norm's statistics, in line with the buckets on the communication stream; the
  // compute stream waits for them (the layer's next kernel reads them).
  void sum(double* values, std::size_t count) override {
    if (count == 0) return;
    follow_compute();
    CONFLUX_NCCL_CHECK(
        ncclAllReduce(values, values, count, ncclDouble, ncclSum, comm_.get(), side_.get()));
    statistics_.record(side_.get());
    CONFLUX_CUDA_CHECK(cudaStreamWaitEvent(compute_, statistics_.get(), 0));
  }
  comm::Merged exchange(std::span<float> gradients) override {
    if (issued_.empty()) {  // no buckets: one sum after backward, on the compute stream
      sum(gradients);
      return comm::Merged::kCurrent;
    }
    follow_compute();  // backward has finished every layer: the gaps are final too
    for (const comm::GradientRange gap : gaps(gradients.size())) {
      all_reduce(gradients.data() + gap.begin, gap.size(), side_.get());
    }
    issued_.clear();
    summed_.record(side_.get());
    CONFLUX_CUDA_CHECK(cudaStreamWaitEvent(compute_, summed_.get(), 0));
    return comm::Merged::kCurrent;
  }

 private:
  void all_reduce(float* values, std::size_t count, cudaStream_t stream) {
    if (count == 0) return;
    CONFLUX_NCCL_CHECK(
        ncclAllReduce(values, values, count, ncclFloat, ncclSum, comm_.get(), stream));
  }
  // Later work on the communication stream waits for what the compute stream enqueued so far.
  void follow_compute() {
    produced_.record(compute_);
    side_.wait(produced_);
  }
  // The parts of [0, count) no bucket of this step covered, in order.
  std::vector<comm::GradientRange> gaps(std::size_t count) {
    std::sort(issued_.begin(), issued_.end(),
              [](const comm::GradientRange& a, const comm::GradientRange& b) {
                return a.begin < b.begin;
              });
    std::vector<comm::GradientRange> out;
    std::size_t at = 0;
    for (const comm::GradientRange& r : issued_) {
      if (r.begin > at) out.push_back({at, r.begin});
      at = std::max(at, r.end);
    }
    if (at < count) out.push_back({at, count});
    return out;
  }

  NcclCommunicator comm_;
  cudaStream_t compute_;
  Stream side_;                              // the buckets' sums
  Event produced_;                           // recorded on compute_: what a bucket's sum waits for
  Event summed_;                             // recorded on side_: what the optimiser step waits for
  Event statistics_;                         // recorded on side_: batch norm's sums
  std::vector<comm::GradientRange> issued_;  // this step's buckets so far
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

std::unique_ptr<NcclSums> make_nccl_sync(const comm::Communicator& trainers, CUstream_st* stream) {
  return std::make_unique<NcclSync>(trainers, stream);
}

std::unique_ptr<comm::GradientSync> make_host_staged_sync(std::unique_ptr<comm::GradientSync> host,
                                                          std::size_t count, CUstream_st* stream) {
  return std::make_unique<HostStagedSync>(std::move(host), count, stream);
}

}  // namespace conflux::gpu
