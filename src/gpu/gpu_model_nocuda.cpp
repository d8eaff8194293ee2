// GpuModel in the CPU-only build (make CUDA=0): the constructor throws, so no object exists and
// the other members are unreachable; they are defined so that callers link in both builds.

#include "conflux/core/error.hpp"
#include "conflux/gpu/gpu_model.hpp"

namespace conflux::gpu {

struct GpuModel::Impl {};

namespace {

[[noreturn]] void no_cuda() {
  CONFLUX_RUNTIME_ERROR("GpuModel: built without CUDA (rebuild with make CUDA=1, see docs/gpu.md)");
}

const std::vector<model::ParamInfo> kNoInfos;
const model::SampleShape kNoShape;
const std::vector<std::string> kNoSummary;
const model::SgdOptions kNoOptions;

}  // namespace

GpuModel::GpuModel(const std::vector<LayerSpec>& /*specs*/,
                   const model::SampleShape& /*input_shape*/, int /*num_classes*/,
                   std::uint64_t /*seed*/, const model::SgdOptions& /*sgd*/) {
  no_cuda();
}
GpuModel::GpuModel(const model::Model& /*initial*/, const model::SgdOptions& /*sgd*/) {
  no_cuda();
}
GpuModel::GpuModel(GpuModel&&) noexcept = default;
GpuModel& GpuModel::operator=(GpuModel&&) noexcept = default;
GpuModel::~GpuModel() = default;

int GpuModel::device() const noexcept {
  return -1;
}
CUstream_st* GpuModel::compute_stream() const noexcept {
  return nullptr;
}
void GpuModel::reserve(int /*max_batch*/) {
  no_cuda();
}
const float* GpuModel::forward(const float* /*device_images*/, int /*n*/) {
  no_cuda();
}
void GpuModel::loss_and_grad_async(const model::Label* /*device_labels*/, float /*grad_scale*/) {
  no_cuda();
}
model::LossResult GpuModel::loss_result() {
  no_cuda();
}
model::LossResult GpuModel::loss_and_grad(const model::Label* /*device_labels*/,
                                          float /*grad_scale*/) {
  no_cuda();
}
void GpuModel::backward() {
  no_cuda();
}
void GpuModel::backward(const float* /*device_grad_logits*/) {
  no_cuda();
}
DeviceSpan<float> GpuModel::params() noexcept {
  return {};
}
DeviceSpan<const float> GpuModel::params() const noexcept {
  return {};
}
DeviceSpan<float> GpuModel::grads() noexcept {
  return {};
}
DeviceSpan<const float> GpuModel::grads() const noexcept {
  return {};
}
const std::vector<model::ParamInfo>& GpuModel::param_infos() const noexcept {
  return kNoInfos;
}
std::size_t GpuModel::num_params() const noexcept {
  return 0;
}
const model::SampleShape& GpuModel::input_shape() const noexcept {
  return kNoShape;
}
int GpuModel::num_classes() const noexcept {
  return 0;
}
const std::vector<std::string>& GpuModel::summary() const noexcept {
  return kNoSummary;
}
const model::SgdOptions& GpuModel::sgd_options() const noexcept {
  return kNoOptions;
}
void GpuModel::set_lr(float /*lr*/) noexcept {}
void GpuModel::sgd_step() {
  no_cuda();
}
void GpuModel::sgd_step(float /*lr*/) {
  no_cuda();
}
bool GpuModel::sgd_started() const noexcept {
  return false;
}
void GpuModel::download_params(std::span<float> /*out*/) const {
  no_cuda();
}
void GpuModel::upload_params(std::span<const float> /*in*/) {
  no_cuda();
}
void GpuModel::download_grads(std::span<float> /*out*/) const {
  no_cuda();
}
void GpuModel::upload_grads(std::span<const float> /*in*/) {
  no_cuda();
}
void GpuModel::download_velocity(std::span<float> /*out*/) const {
  no_cuda();
}
void GpuModel::upload_velocity(std::span<const float> /*in*/, bool /*started*/) {
  no_cuda();
}
void GpuModel::synchronize() const {
  no_cuda();
}

}  // namespace conflux::gpu
