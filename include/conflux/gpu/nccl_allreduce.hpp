#pragma once
/// @file nccl_allreduce.hpp
/// The GPU trainers' gradient sum: ncclAllReduce(sum) of a device buffer among the trainer
/// ranks, one GPU each, ordered on a CUDA stream. Free of CUDA types (pimpl), so that g++ code
/// includes it in both builds; in a CPU-only build (make CUDA=0) the constructor throws
/// RuntimeError "built without CUDA". CPU trainers use comm::MpiAllreduceSync instead
/// (gradient_sync.hpp). See docs/gpu.md.

#include <cstddef>
#include <memory>
#include <string>

#include "conflux/comm/communicator.hpp"

/// The CUDA runtime's stream type (cudaStream_t is CUstream_st*).
struct CUstream_st;

namespace conflux::gpu {

/// An NCCL communicator over the trainer ranks and its in-place float sum.
class NcclAllreduce {
 public:
  /// Collective over `trainers` (every trainer, each with its own GPU current on the calling
  /// thread): trainer 0 creates the ncclUniqueId, MPI broadcasts it over `trainers`, and every
  /// trainer joins with ncclCommInitRank(trainers.size(), id, trainers.rank()). Two ranks on
  /// one device are an NCCL error. RuntimeError on NCCL errors (on every trainer when trainer 0
  /// cannot create the id) and in a CPU-only build.
  explicit NcclAllreduce(const comm::Communicator& trainers);
  NcclAllreduce(NcclAllreduce&&) noexcept;
  NcclAllreduce& operator=(NcclAllreduce&&) noexcept;
  /// Releases the communicator (ncclCommDestroy; errors ignored).
  ~NcclAllreduce();

  /// "nccl-allreduce".
  std::string name() const { return "nccl-allreduce"; }
  /// Number of ranks.
  int size() const noexcept;

  /// Enqueues on `stream` (a cudaStream_t) the in-place element-wise sum over all ranks of the
  /// `count` floats at `device_data`: ordered after the stream's earlier work (the backward
  /// pass) and before its later work (the SGD step). Every rank must call it with the same count.
  void sum_async(float* device_data, std::size_t count, CUstream_st* stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::gpu
