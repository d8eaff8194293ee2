// train.device: the decision rule (auto / cpu / gpu against whether every trainer has a GPU),
// this machine's answer for "auto", and the GPU backend factory where there is no GPU backend.
// Runs everywhere, GPU or not; the collective choice is tested in tests/mpi/gpu_training_test.cpp.

#include <gtest/gtest.h>

#include <string>

#include "conflux/core/error.hpp"
#include "conflux/gpu/gpu_model.hpp"
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

// The GPU model runs straight lists of its kernels' layers; a graph is refused by index.
TEST(GpuDeviceChoice, GraphWiringAndLayersWithoutKernelsAreNamed) {
  const std::vector<LayerSpec> chain{{.type = "flatten", .name = "f", .inputs = {"input"}},
                                     {.type = "linear", .out = 10, .inputs = {"f"}}};
  EXPECT_EQ(gpu::first_layer_without_gpu_kernel(chain), -1);
  std::vector<LayerSpec> skip = chain;
  skip[1].inputs = {"input"};
  EXPECT_EQ(gpu::first_layer_without_gpu_kernel(skip), 1);
  std::vector<LayerSpec> norm = chain;
  norm.insert(norm.begin() + 1, LayerSpec{.type = "batchnorm"});
  norm[2].inputs.clear();
  EXPECT_EQ(gpu::first_layer_without_gpu_kernel(norm), 1);
  // The GPU max pool has no padding: a padded one is refused, an unpadded one runs.
  std::vector<LayerSpec> pooled = chain;
  pooled.insert(pooled.begin(), LayerSpec{.type = "maxpool", .kernel = 3, .stride = 2});
  pooled[1].inputs.clear();
  EXPECT_EQ(gpu::first_layer_without_gpu_kernel(pooled), -1);
  pooled[0].padding = 1;
  EXPECT_EQ(gpu::first_layer_without_gpu_kernel(pooled), 0);
}

}  // namespace
}  // namespace conflux::train
