// train.device: the decision rule (auto / cpu / gpu against whether every trainer has a GPU),
// this machine's answer for "auto", and the GPU backend factory where there is no GPU backend.
// Runs everywhere, GPU or not; the collective choice is tested in tests/mpi/gpu_training_test.cpp.

#include <gtest/gtest.h>

#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/device_layer_types.hpp"
#include "conflux/gpu/runtime.hpp"
#include "conflux/model/model.hpp"
#include "conflux/train/compute_backend.hpp"
#include "conflux/train/device_choice.hpp"

namespace conflux::train {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GpuDeviceChoice, CpuIsTheCpuWithoutANotice) {
  for (const bool gpu : {false, true}) {
    const DeviceDecision d = decide_device("cpu", gpu, gpu ? "" : "no CUDA device", "default");
    EXPECT_EQ(d.device, ComputeDevice::kCpu);
    EXPECT_TRUE(d.notice.empty()) << d.notice;
  }
}

TEST(GpuDeviceChoice, AutoAndGpuTakeTheGpuWhenEveryTrainerHasOne) {
  for (const char* setting : {"auto", "gpu"}) {
    const DeviceDecision d = decide_device(setting, true, "", "default");
    EXPECT_EQ(d.device, ComputeDevice::kGpu) << setting;
    EXPECT_TRUE(d.notice.empty()) << d.notice;
  }
}

TEST(GpuDeviceChoice, AutoWithoutAGpuFallsBackToTheCpuWithOneNotice) {
  const DeviceDecision d = decide_device("auto", false, "no CUDA driver", "default");
  EXPECT_EQ(d.device, ComputeDevice::kCpu);
  EXPECT_EQ(d.notice, "no usable GPU (no CUDA driver): trainers compute on the CPU");
}

TEST(GpuDeviceChoice, GpuWithoutAGpuIsAnInputErrorNamingTheKeyAndTheReason) {
  try {
    decide_device("gpu", false, "trainer 1: no CUDA device", "run.toml:12:10");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "run.toml:12:10")) << what;
    EXPECT_TRUE(contains(what, "train.device = \"gpu\"")) << what;
    EXPECT_TRUE(contains(what, "trainer 1: no CUDA device")) << what;
  }
}

TEST(GpuDeviceChoice, AutoOnThisMachineFollowsTheProbe) {
  const gpu::GpuProbe probe = gpu::probe_gpus();
  const DeviceDecision d = decide_device("auto", probe.devices > 0, probe.reason, "default");
  if (probe.devices > 0) {
    EXPECT_EQ(d.device, ComputeDevice::kGpu);
    EXPECT_GE(gpu::select_device(0, probe.devices), 0);
  } else {
    EXPECT_EQ(d.device, ComputeDevice::kCpu);
    EXPECT_FALSE(probe.reason.empty());
    EXPECT_TRUE(contains(d.notice, probe.reason)) << d.notice;
    EXPECT_THROW(decide_device("gpu", false, probe.reason, "default"), InputError);
  }
}

TEST(GpuDeviceChoice, GpuBackendNeedsACudaBuildAndAChosenGpu) {
  model::Model model({{.type = "flatten"}, {.type = "linear", .out = 10}}, {1, 4, 4}, 10, 1);
  try {
    make_gpu_backend(std::move(model), BackendOptions{});  // no GPU chosen
    FAIL() << "a GPU backend without a GPU";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, gpu::built_with_cuda() ? "no GPU was chosen" : "built without CUDA"))
        << what;
  }
}

}  // namespace
}  // namespace conflux::train

namespace conflux::train {
namespace {

// Every layer type has device kernels, graphs included; a type without them would be named by
// index (the one list: gpu/device_layer_types.hpp).
TEST(GpuDeviceChoice, LayersWithoutDeviceKernelsAreNamed) {
  const std::vector<LayerSpec> graph{{.type = "conv2d", .out = 4, .name = "c", .inputs = {"input"}},
                                     {.type = "batchnorm", .name = "b"},
                                     {.type = "maxpool", .kernel = 3, .stride = 2, .padding = 1},
                                     {.type = "add", .inputs = {"b", "c"}},
                                     {.type = "globalavgpool"},
                                     {.type = "dropout"},
                                     {.type = "linear", .out = 10}};
  EXPECT_EQ(gpu::first_layer_without_device_kernels(graph), -1);
  std::vector<LayerSpec> unknown = graph;
  unknown[4].type = "lstm";
  EXPECT_EQ(gpu::first_layer_without_device_kernels(unknown), 4);
}

}  // namespace
}  // namespace conflux::train
