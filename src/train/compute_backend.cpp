#include "conflux/train/compute_backend.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "conflux/comm/kreduce_sync.hpp"
#include "conflux/core/error.hpp"
#include "conflux/model/optimizer.hpp"

namespace conflux::train {

std::unique_ptr<comm::GradientSync> make_gradient_sync(const Config& config,
                                                       const comm::Communicator& trainers,
                                                       std::size_t parameters,
                                                       std::chrono::duration<double> timeout) {
  const CommSection& c = config.comm();
  if (c.strategy == "kreduce") {
    return std::make_unique<comm::KReduceSync>(
        trainers, parameters, comm::KReduceOptions{c.aggregators, c.stale_nonaggregators, timeout});
  }
  return std::make_unique<comm::MpiAllreduceSync>(trainers, timeout);
}

namespace {

// model::Model + model::Optimizer + a host GradientSync: the calls the training loop always
// made.
class CpuBackend final : public ComputeBackend {
 public:
  CpuBackend(model::Model model, const BackendOptions& o)
      : model_(std::move(model)),
        optimizer_(model::make_optimizer(o.config->train(), model_.params().size())),
        label_smoothing_(o.config->train().label_smoothing),
        clip_norm_(static_cast<float>(o.config->train().clip_grad_norm)),
        sync_(make_gradient_sync(*o.config, *o.trainers, model_.params().size(), o.timeout)),
        reducer_(*o.trainers, o.timeout),
        seed_(o.config->run().seed) {}

  std::string device_name() const override { return "CPU"; }
  std::string sync_name() const override { return sync_->name(); }
  const std::vector<model::ParamInfo>& state_infos() const noexcept override {
    return model_.state_infos();
  }
  std::size_t state_size() const noexcept override { return model_.state().size(); }

  void stage(data::Batch& batch) override {
    CONFLUX_CHECK(batch.encoding == data::ImageEncoding::kFloat32,
                  "CPU trainer: a batch of 8-bit images (the CPU takes normalised floats)");
    batch_ = &batch;
  }
  void compute(float grad_scale, std::uint64_t global_step) override {
    CONFLUX_CHECK(batch_ != nullptr, "CPU trainer: compute() without a staged batch");
    const data::Batch& batch = *std::exchange(batch_, nullptr);
    sync_->progress();
    const model::Pass pass{.training = true,
                           .seed = seed_,
                           .step = global_step,
                           .samples = batch.samples,
                           .reducer = &reducer_};
    const model::Tensor& logits = model_.forward(batch.images, pass);
    sync_->progress();
    const model::LossResult r = model::softmax_cross_entropy(logits, batch.labels, grad_scale,
                                                             &grad_logits_, label_smoothing_);
    losses_.loss_sum += r.loss_sum;
    losses_.correct += r.correct;
    losses_.skipped += r.skipped;
    model_.backward(grad_logits_);
  }
  model::LossResult take_losses() override { return std::exchange(losses_, {}); }

  comm::Merged exchange() override { return sync_->exchange(model_.grads()); }
  bool drain() override { return sync_->drain(model_.grads()); }
  void progress() override { sync_->progress(); }
  double gradient_sum_of_squares() override { return model::sum_of_squares(model_.grads()); }
  void apply(double lr) override {
    // The merged gradient is the same on every replica, so every replica clips alike.
    if (clip_norm_ > 0.0f) clipped_norm_ = model::clip_grad_norm(model_.grads(), clip_norm_);
    optimizer_->set_lr(lr);
    optimizer_->step(model_.params(), model_.grads());
  }
  double lr() const override { return optimizer_->lr(); }
  double clipped_grad_norm() override { return clipped_norm_; }

  model::LossResult evaluate(const data::Batch& batch) override {
    CONFLUX_CHECK(batch.encoding == data::ImageEncoding::kFloat32,
                  "CPU trainer: an evaluation batch of 8-bit images (the CPU takes floats)");
    return model::softmax_cross_entropy(model_.forward(batch.images), batch.labels, 0, nullptr);
  }

  void download(std::vector<float>& params, model::OptimizerState& optimizer) override {
    params.assign(model_.state().begin(), model_.state().end());
    optimizer_->save(optimizer);
  }
  void restore(std::span<const float> params, const model::OptimizerState& optimizer) override {
    CONFLUX_CHECK(params.size() == model_.state().size(),
                  "restore: {} values for a model state of {}", params.size(),
                  model_.state().size());
    std::copy(params.begin(), params.end(), model_.state().begin());
    optimizer_->restore(optimizer);
  }

  const model::Model& sync_host_model() override { return model_; }
  const model::Model& host_model() const noexcept override { return model_; }

 private:
  model::Model model_;
  std::unique_ptr<model::Optimizer> optimizer_;
  double label_smoothing_;
  float clip_norm_;
  double clipped_norm_ = std::numeric_limits<double>::quiet_NaN();  // of the last apply()
  std::unique_ptr<comm::GradientSync> sync_;
  TrainerStatReducer reducer_;
  std::uint64_t seed_;
  const data::Batch* batch_ = nullptr;
  model::Tensor grad_logits_;
  model::LossResult losses_;  // of the compute() calls since take_losses()
};

}  // namespace

std::unique_ptr<ComputeBackend> make_backend(model::Model model, const BackendOptions& options) {
  if (options.device.device == ComputeDevice::kGpu) {
    return make_gpu_backend(std::move(model), options);
  }
  return make_cpu_backend(std::move(model), options);
}

std::unique_ptr<ComputeBackend> make_cpu_backend(model::Model model,
                                                 const BackendOptions& options) {
  return std::make_unique<CpuBackend>(std::move(model), options);
}

}  // namespace conflux::train
