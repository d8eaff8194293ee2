#include "conflux/gpu/gpu_model.hpp"

#include <fmt/format.h>

#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/gpu/check.hpp"
#include "conflux/gpu/handles.hpp"
#include "conflux/gpu/model_engine.hpp"
#include "conflux/model/model.hpp"
#include "device_executor.cuh"

namespace conflux::gpu {
namespace {

// Makes `device` current on the calling thread if it is not already.
void ensure_device(int device) {
  int current = -1;
  CONFLUX_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) CONFLUX_CUDA_CHECK(cudaSetDevice(device));
}

void validate(const model::SgdOptions& o) {
  CONFLUX_REQUIRE(o.lr >= 0.0f, "sgd: learning rate must be >= 0, got {}", o.lr);
  CONFLUX_REQUIRE(o.momentum >= 0.0f, "sgd: momentum must be >= 0, got {}", o.momentum);
  CONFLUX_REQUIRE(o.weight_decay >= 0.0f, "sgd: weight decay must be >= 0, got {}", o.weight_decay);
  CONFLUX_REQUIRE(!o.nesterov, "sgd: Nesterov momentum is not implemented on the GPU");
}

}  // namespace

struct GpuModel::Impl {
  Impl(const std::vector<LayerSpec>& specs, const model::Model& reference,
       const model::SgdOptions& options, int dev)
      : device(dev),
        sgd(options),
        infos(reference.param_infos()),
        input_shape(reference.input_shape()),
        summary(reference.summary()),
        blas(stream.get()),
        engine(DeviceExecutor(stream.get(), blas.get()), specs, reference) {}

  int device;
  model::SgdOptions sgd;
  std::vector<model::ParamInfo> infos;
  model::SampleShape input_shape;
  std::vector<std::string> summary;
  Stream stream;
  CublasHandle blas;
  ModelEngine<DeviceExecutor> engine;
  // Per-sample losses copied back for loss_result().
  PinnedBuffer<double> host_loss;
  PinnedBuffer<std::int32_t> host_status;
  Event loss_copied;
  int loss_n = -1;  // batch of the pending loss, -1 when none
};

GpuModel::GpuModel(const std::vector<LayerSpec>& specs, const model::SampleShape& input_shape,
                   int num_classes, std::uint64_t seed, const model::SgdOptions& sgd)
    // The CPU model validates the specs and yields the layout and the initial parameters, so
    // both implementations start from the same bits.
    : GpuModel(model::Model(specs, input_shape, num_classes, seed), sgd) {}

GpuModel::GpuModel(const model::Model& initial, const model::SgdOptions& sgd) {
  validate(sgd);
  int device = -1;
  CONFLUX_CUDA_CHECK(cudaGetDevice(&device));
  impl_ = std::make_unique<Impl>(initial.specs(), initial, sgd, device);
  impl_->stream.synchronize();  // the upload read the initial model's host memory
}

GpuModel::GpuModel(GpuModel&&) noexcept = default;
GpuModel& GpuModel::operator=(GpuModel&&) noexcept = default;
GpuModel::~GpuModel() = default;

int GpuModel::device() const noexcept {
  return impl_->device;
}

CUstream_st* GpuModel::compute_stream() const noexcept {
  return impl_->stream.get();
}

void GpuModel::reserve(int max_batch) {
  ensure_device(impl_->device);
  impl_->engine.reserve(max_batch);
  if (impl_->host_loss.size() < static_cast<std::size_t>(max_batch)) {
    impl_->host_loss = PinnedBuffer<double>(max_batch);
    impl_->host_status = PinnedBuffer<std::int32_t>(max_batch);
  }
}

const float* GpuModel::forward(const float* device_images, int n) {
  CONFLUX_CHECK(n >= 0, "GpuModel::forward: batch size {} < 0", n);
  CONFLUX_CHECK(n == 0 || device_images != nullptr, "GpuModel::forward: null images");
  ensure_device(impl_->device);
  // A pending loss copy may still be writing host_loss, which reserve() may replace.
  if (impl_->loss_n >= 0) impl_->loss_copied.synchronize();
  reserve(n);
  impl_->loss_n = -1;
  return impl_->engine.forward(device_images, n);
}

void GpuModel::loss_and_grad_async(const model::Label* device_labels, float grad_scale) {
  ensure_device(impl_->device);
  Impl& m = *impl_;
  const int n = m.engine.batch();
  CONFLUX_CHECK(n >= 0, "GpuModel: loss before forward");
  CONFLUX_CHECK(n == 0 || device_labels != nullptr, "GpuModel: null labels");
  m.engine.loss(device_labels, grad_scale);
  copy_to_host(m.host_loss.data(), m.engine.sample_loss(), n, m.stream.get());
  copy_to_host(m.host_status.data(), m.engine.sample_status(), n, m.stream.get());
  m.loss_copied.record(m.stream.get());
  m.loss_n = n;
}

model::LossResult GpuModel::loss_result() {
  ensure_device(impl_->device);
  Impl& m = *impl_;
  CONFLUX_CHECK(m.loss_n >= 0, "GpuModel::loss_result without loss_and_grad_async");
  m.loss_copied.synchronize();
  const int n = std::exchange(m.loss_n, -1);
  return sum_losses(m.host_loss.data(), m.host_status.data(), n, m.engine.num_classes());
}

model::LossResult GpuModel::loss_and_grad(const model::Label* device_labels, float grad_scale) {
  loss_and_grad_async(device_labels, grad_scale);
  return loss_result();
}

void GpuModel::backward() {
  ensure_device(impl_->device);
  impl_->engine.backward(nullptr);
}

void GpuModel::backward(const float* device_grad_logits) {
  CONFLUX_CHECK(device_grad_logits != nullptr || impl_->engine.batch() == 0,
                "GpuModel::backward: null dL/dlogits");
  ensure_device(impl_->device);
  // An empty batch has no dL/dlogits to point at; backward(nullptr) would ask for the loss.
  static const float kNone = 0.0f;
  impl_->engine.backward(device_grad_logits != nullptr ? device_grad_logits : &kNone);
}

DeviceSpan<float> GpuModel::params() noexcept {
  return {impl_->engine.params(), impl_->engine.num_params()};
}
DeviceSpan<const float> GpuModel::params() const noexcept {
  return {impl_->engine.params(), impl_->engine.num_params()};
}
DeviceSpan<float> GpuModel::grads() noexcept {
  return {impl_->engine.grads(), impl_->engine.num_params()};
}
DeviceSpan<const float> GpuModel::grads() const noexcept {
  return {impl_->engine.grads(), impl_->engine.num_params()};
}
const std::vector<model::ParamInfo>& GpuModel::param_infos() const noexcept {
  return impl_->infos;
}
std::size_t GpuModel::num_params() const noexcept {
  return impl_->engine.num_params();
}
const model::SampleShape& GpuModel::input_shape() const noexcept {
  return impl_->input_shape;
}
int GpuModel::num_classes() const noexcept {
  return impl_->engine.num_classes();
}
const std::vector<std::string>& GpuModel::summary() const noexcept {
  return impl_->summary;
}

const model::SgdOptions& GpuModel::sgd_options() const noexcept {
  return impl_->sgd;
}
void GpuModel::set_lr(float lr) noexcept {
  impl_->sgd.lr = lr;
}

void GpuModel::sgd_step() {
  ensure_device(impl_->device);
  const model::SgdOptions& o = impl_->sgd;
  CONFLUX_CHECK(o.lr >= 0.0f, "sgd: learning rate must be >= 0, got {}", o.lr);
  impl_->engine.sgd_step(o.lr, o.momentum, o.weight_decay);
}

void GpuModel::sgd_step(float lr) {
  set_lr(lr);
  sgd_step();
}

bool GpuModel::sgd_started() const noexcept {
  return impl_->engine.sgd_started();
}

namespace {

void check_size(std::size_t got, std::size_t want, const char* what) {
  CONFLUX_CHECK(got == want, "GpuModel: {} of {} floats for a model of {}", what, got, want);
}

}  // namespace

void GpuModel::download_params(std::span<float> out) const {
  check_size(out.size(), num_params(), "download_params");
  ensure_device(impl_->device);
  copy_to_host(out.data(), impl_->engine.params(), out.size(), impl_->stream.get());
  impl_->stream.synchronize();
}

void GpuModel::upload_params(std::span<const float> in) {
  check_size(in.size(), num_params(), "upload_params");
  ensure_device(impl_->device);
  copy_to_device(impl_->engine.params(), in.data(), in.size(), impl_->stream.get());
  impl_->stream.synchronize();
}

void GpuModel::download_grads(std::span<float> out) const {
  check_size(out.size(), num_params(), "download_grads");
  ensure_device(impl_->device);
  copy_to_host(out.data(), impl_->engine.grads(), out.size(), impl_->stream.get());
  impl_->stream.synchronize();
}

void GpuModel::upload_grads(std::span<const float> in) {
  check_size(in.size(), num_params(), "upload_grads");
  ensure_device(impl_->device);
  copy_to_device(impl_->engine.grads(), in.data(), in.size(), impl_->stream.get());
  impl_->stream.synchronize();
}

void GpuModel::download_velocity(std::span<float> out) const {
  check_size(out.size(), num_params(), "download_velocity");
  ensure_device(impl_->device);
  copy_to_host(out.data(), impl_->engine.velocity(), out.size(), impl_->stream.get());
  impl_->stream.synchronize();
}

void GpuModel::upload_velocity(std::span<const float> in, bool started) {
  check_size(in.size(), num_params(), "upload_velocity");
  ensure_device(impl_->device);
  copy_to_device(impl_->engine.velocity(), in.data(), in.size(), impl_->stream.get());
  impl_->stream.synchronize();
  impl_->engine.set_sgd_started(started);
}

void GpuModel::synchronize() const {
  ensure_device(impl_->device);
  impl_->stream.synchronize();
}

}  // namespace conflux::gpu
