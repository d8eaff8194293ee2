#include "conflux/train/progress_printer.hpp"

#include <cmath>

#include "conflux/core/elapsed.hpp"

#include "conflux/model/model.hpp"

namespace conflux::train {

void ProgressPrinter::on_train_begin(const model::Model& model) {
  log_.info("model: {} parameters", model.params().size());
  for (const auto& line : model.summary()) log_.info("  {}", line);
}

void ProgressPrinter::on_step_report(const StepReport& r) {
  log_.info(
      "epoch {} step {:>5}/{}  loss {:.4f}  acc {:6.2f}%  {:8.0f} samples/s  lr {:.4g}  "
      "data wait {:.2f} ms/step  ETA {}",
      r.epoch, r.epoch_step, r.steps_in_epoch, r.loss, 100 * r.accuracy, r.samples_per_s,
      r.learning_rate, r.data_wait_ms, human_duration(r.eta_s));
}

void ProgressPrinter::on_epoch_end(const EpochReport& r) {
  const std::string test =
      std::isnan(r.test_accuracy)
          ? std::string("test: off")
          : fmt::format("test loss {:.4f}  test acc {:6.2f}%", r.test_loss, 100 * r.test_accuracy);
  log_.info(
      "epoch {}/{} done: train loss {:.4f}  train acc {:6.2f}%  {}  {:.0f} samples/s  "
      "{:.1f} s (+{:.1f} s eval)",
      r.epoch, r.epochs, r.train_loss, 100 * r.train_accuracy, test, r.samples_per_s,
      r.epoch_seconds, r.eval_seconds);
  if (r.worker_batches + r.fallback_batches > 0 || r.audited) {
    log_.info(
        "epoch {}/{} batches: {} built by trainers, {} by workers, {} rebuilt after a "
        "worker timeout{}",
        r.epoch, r.epochs, r.local_batches, r.worker_batches, r.fallback_batches,
        r.audited ? fmt::format("; audit: all {} samples used exactly once", r.samples)
                  : std::string());
  }
  print_noise_scale(r);
}

void ProgressPrinter::print_noise_scale(const EpochReport& r) {
  if (!r.noise_steps) return;
  log_.info(
      "epoch {}/{} gradient noise scale: B_noise {:.1f} (tr(Sigma) {:.4g} / |G|^2 {:.4g}, "
      "{} steps){}",
      r.epoch, r.epochs, *r.noise_scale, *r.grad_trace, *r.grad_norm2, *r.noise_steps,
      std::isnan(*r.noise_scale) ? ": too noisy to tell (|G|^2 or tr(Sigma) not positive)" : "");
}

void ProgressPrinter::on_train_end(const model::Model&, const TrainSummary& s) {
  log_.info("training done in {:.1f} s; final test accuracy {:.2f}%", s.total_seconds,
            100 * s.final_test_accuracy);
}

}  // namespace conflux::train
