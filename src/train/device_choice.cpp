#include "conflux/train/device_choice.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layer_types.hpp"
#include "conflux/gpu/runtime.hpp"

namespace conflux::train {

DeviceDecision decide_device(const std::string& setting, bool every_trainer_has_gpu,
                             const std::string& missing, const std::string& where) {
  if (setting == "cpu") return {};
  CONFLUX_CHECK(setting == "auto" || setting == "gpu",
                "train.device = '{}' (want auto, cpu or gpu)", setting);
  if (every_trainer_has_gpu) return {.device = ComputeDevice::kGpu, .notice = {}};
  CONFLUX_REQUIRE(setting != "gpu", "{}: train.device = \"gpu\" but no usable GPU: {}", where,
                  missing);
  return {.device = ComputeDevice::kCpu,
          .notice = fmt::format("no usable GPU ({}): trainers compute on the CPU", missing)};
}

namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

// Whether any two trainers of this node use the same GPU (collective over the node's trainers).
bool node_shares_a_gpu(const comm::Communicator& node, const std::string& pci_bus_id) {
  std::vector<std::string> ids = node.gather(pci_bus_id, 0);
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end(), [](const std::string& a, const std::string& b) {
           return !a.empty() && a == b;
         }) != ids.end();
}

}  // namespace

DeviceChoice choose_device(const Config& config, const comm::Communicator& trainers,
                           const Logger* log) {
  const std::string& setting = config.train().device;
  DeviceChoice choice;
  choice.description = "CPU";
  if (setting == "cpu") return choice;  // the same on every trainer: nothing to agree on
  // The same on every trainer too (the config is agreed), and never a silent fallback for
  // "gpu": a layer type without device kernels.
  if (const int layer = gpu::first_layer_without_device_kernels(config.layers()); layer >= 0) {
    const LayerSpec& spec = config.layers()[static_cast<std::size_t>(layer)];
    const std::string what =
        fmt::format("model.layers[{}] (type = \"{}\") has no GPU kernel", layer, spec.type);
    CONFLUX_REQUIRE(setting != "gpu", "{}: {}; set train.device = \"cpu\" (or \"auto\")",
                    config.where("model.layers"), what);
    if (log != nullptr && trainers.rank() == 0) log->info("{}: trainers compute on the CPU", what);
    return choice;
  }

  const gpu::GpuProbe probe = gpu::probe_gpus();
  const comm::Communicator node = trainers.split_node_local();
  // The lowest trainer without a GPU, and its reason, for every trainer's decision and message.
  const std::int64_t lacking = trainers.allreduce_min(probe.devices > 0 ? kNone : trainers.rank());
  std::string missing;
  if (lacking != kNone) {
    missing = trainers.broadcast(probe.reason, static_cast<int>(lacking));
    if (trainers.size() > 1) missing = fmt::format("trainer {}: {}", lacking, missing);
  }
  const DeviceDecision decision =
      decide_device(setting, lacking == kNone, missing, config.where("train.device"));
  if (decision.device == ComputeDevice::kCpu) {
    if (log != nullptr && trainers.rank() == 0) log->info("{}", decision.notice);
    return choice;
  }

  // Every trainer has a GPU. Errors of the local CUDA calls wait until the collectives are done,
  // so that no other trainer is left waiting in one.
  std::exception_ptr error;
  gpu::DeviceInfo info;
  gpu::MemoryInfo memory;
  try {
    choice.device = ComputeDevice::kGpu;
    choice.gpu = gpu::select_device(node.rank(), probe.devices);
    gpu::use_device(choice.gpu);
    info = gpu::device_info(choice.gpu);
    memory = gpu::memory_info();
    choice.description = gpu::describe(info);
  } catch (...) {
    error = std::current_exception();
  }
  const bool shared_here = node_shares_a_gpu(node, error ? std::string() : info.pci_bus_id);
  choice.shared_gpu = trainers.allreduce_max(shared_here ? 1 : 0) != 0;
  if (error) std::rethrow_exception(error);
  if (log != nullptr) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    log->info(
        "trainer {}: computing on {}, {:.1f} GiB free; node-local trainer {} of {}, {} visible "
        "device(s)",
        trainers.rank(), choice.description, static_cast<double>(memory.free_bytes) / kGiB,
        node.rank(), node.size(), probe.devices);
  }
  return choice;
}

}  // namespace conflux::train
