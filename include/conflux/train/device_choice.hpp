#pragma once
/// @file device_choice.hpp
/// Where the trainer ranks compute (train.device): the decision from the GPU probe, and the
/// collective choice of each trainer's CUDA device (node-local trainer rank modulo the visible
/// devices). See docs/gpu.md.

#include <string>

#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// The processor a trainer computes on.
enum class ComputeDevice { kCpu, kGpu };

/// What decide_device() concluded.
struct DeviceDecision {
  ComputeDevice device = ComputeDevice::kCpu;
  /// For train.device = "auto" without a GPU: "no usable GPU (<reason>): trainers compute on
  /// the CPU", the line trainer 0 logs once; empty otherwise.
  std::string notice;
};

/// The rule of train.device, pure: `setting` is "auto", "cpu" or "gpu"; `every_trainer_has_gpu`
/// whether each trainer sees at least one device; `missing` why not (the probe's reason, e.g.
/// "no CUDA driver ..."); `where` where train.device was set (Config::where). "cpu" gives the CPU
/// and "auto" a GPU when every trainer has one, else the CPU with a notice; "gpu" without a GPU
/// everywhere is an InputError naming train.device, `where` and `missing`.
DeviceDecision decide_device(const std::string& setting, bool every_trainer_has_gpu,
                             const std::string& missing, const std::string& where);

/// A trainer's device, as chosen by choose_device().
struct DeviceChoice {
  ComputeDevice device = ComputeDevice::kCpu;
  int gpu = -1;             ///< CUDA device index among the visible ones (kGpu only)
  std::string description;  ///< "CPU", or gpu::describe() of the device
  /// Some GPU serves more than one trainer (same PCI bus id on a node). NCCL needs one device
  /// per rank, so the trainers then sum gradients through host memory with MPI.
  bool shared_gpu = false;
};

/// Collective over `trainers` (every trainer calls it, once, before building its Trainer):
/// probes the GPUs (train.device "auto" or "gpu"), decides with decide_device() so that all
/// trainers agree (a GPU only when every trainer has one), and on the GPU path makes device
/// gpu::select_device(node-local trainer rank, visible devices) current on the calling thread.
/// The node-local rank counts only the trainers on the node (MPI_Comm_split_type(SHARED) of
/// `trainers`); CUDA_VISIBLE_DEVICES (and so SLURM's --gpus-per-task) limits the visible set.
/// Logs the device on every trainer and, for "auto" without a GPU, the notice once (trainer 0).
/// InputError for "gpu" without a GPU on some trainer (on every trainer, same message);
/// RuntimeError when the chosen device cannot be used (on that trainer, after the collectives).
DeviceChoice choose_device(const Config& config, const comm::Communicator& trainers,
                           const Logger* log);

}  // namespace conflux::train
