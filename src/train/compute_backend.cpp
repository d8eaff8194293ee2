#include "conflux/train/compute_backend.hpp"

#include <algorithm>
#include <utility>

#include "conflux/comm/kreduce_sync.hpp"
#include "conflux/core/error.hpp"
#include "conflux/model/sgd.hpp"

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

// model::Model + model::Sgd + a host GradientSync: the calls the training loop always made.
class CpuBackend final : public ComputeBackend {
 public:
  CpuBackend(model::Model model, const BackendOptions& o)
      : model_(std::move(model)),
        sgd_(model::SgdOptions{static_cast<float>(o.config->train().lr),
                               static_cast<float>(o.config->train().momentum),
                               static_cast<float>(o.config->train().weight_decay)},
             model_.params().size()),
        sync_(make_gradient_sync(*o.config, *o.trainers, model_.params().size(), o.timeout)) {}

  std::string device_name() const override { return "CPU"; }
  std::string sync_name() const override { return sync_->name(); }
  const std::vector<model::ParamInfo>& param_infos() const noexcept override {
    return model_.param_infos();
  }
  std::size_t num_params() const noexcept override { return model_.params().size(); }

  void stage(const data::Batch& batch) override { batch_ = &batch; }
  void compute(float grad_scale) override {
    CONFLUX_CHECK(batch_ != nullptr, "CPU trainer: compute() without a staged batch");
    const data::Batch& batch = *std::exchange(batch_, nullptr);
    sync_->progress();
    const model::Tensor& logits = model_.forward(batch.images);
    sync_->progress();
    result_ = model::softmax_cross_entropy(logits, batch.labels, grad_scale, &grad_logits_);
    model_.backward(grad_logits_);
  }
  model::LossResult loss() override { return result_; }

  comm::Merged exchange() override { return sync_->exchange(model_.grads()); }
  bool drain() override { return sync_->drain(model_.grads()); }
  void progress() override { sync_->progress(); }
  void apply(float lr) override {
    sgd_.set_lr(lr);
    sgd_.step(model_.params(), model_.grads());
  }
  float lr() const override { return sgd_.options().lr; }
  bool sgd_started() const override { return sgd_.started(); }

  model::LossResult evaluate(const model::Tensor& images,
                             std::span<const model::Label> labels) override {
    return model::softmax_cross_entropy(model_.forward(images), labels, 0, nullptr);
  }

  void download(std::vector<float>& params, std::vector<float>& velocity) override {
    params.assign(model_.params().begin(), model_.params().end());
    velocity.assign(sgd_.velocity().begin(), sgd_.velocity().end());
  }
  void restore(std::span<const float> params, std::span<const float> velocity,
               bool started) override {
    CONFLUX_CHECK(params.size() == model_.params().size(),
                  "restore: {} parameters for a model of {}", params.size(),
                  model_.params().size());
    std::copy(params.begin(), params.end(), model_.params().begin());
    sgd_.restore(velocity, started);
  }

  const model::Model& sync_host_model() override { return model_; }
  const model::Model& host_model() const noexcept override { return model_; }

 private:
  model::Model model_;
  model::Sgd sgd_;
  std::unique_ptr<comm::GradientSync> sync_;
  const data::Batch* batch_ = nullptr;
  model::Tensor grad_logits_;
  model::LossResult result_;
};

}  // namespace

std::unique_ptr<ComputeBackend> make_cpu_backend(model::Model model,
                                                 const BackendOptions& options) {
  return std::make_unique<CpuBackend>(std::move(model), options);
}

}  // namespace conflux::train
