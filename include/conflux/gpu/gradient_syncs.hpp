#pragma once
/// @file gradient_syncs.hpp
/// The GPU trainers' gradient exchanges, as comm::GradientSync over device memory (the spans
/// they are given point to the device): NCCL's allreduce on the compute stream, or a host
/// strategy (MPI allreduce, K-Reduce) on a pinned host copy. Free of CUDA types; defined in
/// CUDA builds only (src/gpu/gradient_syncs.cu).

#include <cstddef>
#include <memory>

#include "conflux/comm/communicator.hpp"
#include "conflux/comm/gradient_sync.hpp"
#include "conflux/gpu/device_layer.hpp"

/// The CUDA runtime's stream type (cudaStream_t is CUstream_st*).
struct CUstream_st;

namespace conflux::gpu {

/// NCCL's sums of one GPU trainer, on one communicator: the gradients (comm::GradientSync) and
/// batch norm's statistics (DeviceStatSum, sum(double*, count)). The statistics and the
/// gradient buckets go through one communication stream, in order: NCCL kernels of two
/// communicators, or of one on two streams, may wait for each other and hang.
class NcclSums : public comm::GradientSync, public DeviceStatSum {};

/// ncclAllReduce(sum) in place, enqueued on `stream` (after the backward pass, before the
/// optimiser step), among `trainers`, one GPU each. Collective: trainer 0 creates the NCCL id,
/// MPI broadcasts it, every trainer joins (ncclCommInitRank); two ranks on one device are an
/// NCCL error. RuntimeError on NCCL errors, on every trainer when trainer 0 cannot create the
/// id.
std::unique_ptr<NcclSums> make_nccl_sync(const comm::Communicator& trainers, CUstream_st* stream);

/// `host`'s exchange on device gradients of `count` floats: each call waits for `stream`,
/// downloads into pinned memory, exchanges there, and uploads what the trainer must apply.
/// For K-Reduce and for trainers that share a GPU (which NCCL refuses).
std::unique_ptr<comm::GradientSync> make_host_staged_sync(std::unique_ptr<comm::GradientSync> host,
                                                          std::size_t count, CUstream_st* stream);

}  // namespace conflux::gpu
