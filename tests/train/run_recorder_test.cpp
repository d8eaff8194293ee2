// The writers of steps.jsonl, metrics.jsonl and profile-trainer<t>.jsonl: the lines are the
// ones conflux wrote before the field lists (telemetry/run_record.hpp) existed, byte for byte
// (captured from the format-string writers of 5b903c2 on these inputs).
#include "conflux/train/run_recorder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "conflux/offload/window_meter.hpp"
#include "conflux/telemetry/run_record_io.hpp"

namespace conflux::train {
namespace {

StepReport step_report() {
  StepReport s;
  s.step = 15;
  s.epoch = 2;
  s.epoch_step = 5;
  s.steps_in_epoch = 10;
  s.loss = 0.123456789;
  s.accuracy = 0.5;
  s.samples_per_s = 1234.5;
  s.total_steps = 100;
  s.learning_rate = 0.05;
  s.data_wait_ms = 1.25;
  s.offload_ratio = 0.3;
  s.time_s = 12.75;
  s.eta_s = std::nan("");
  return s;
}

EpochReport epoch_report() {
  EpochReport e;
  e.epoch = 3;
  e.epochs = 3;
  e.train_loss = 0.4;
  e.train_accuracy = 0.9;
  e.test_loss = e.test_accuracy = std::nan("");
  e.samples_per_s = 999.25;
  e.epoch_seconds = 6.5;
  e.eval_seconds = 0;
  e.elapsed_seconds = 20.125;
  e.global_step = 30;
  e.samples = 6000;
  e.local_batches = 5;
  e.worker_batches = 7;
  e.fallback_batches = 1;
  e.audited = true;
  return e;
}

TEST(RunRecorder, StepsLineIsByteIdenticalToTheFormerWriter) {
  EXPECT_EQ(
      steps_json_line(step_report()),
      R"({"step": 15, "epoch": 2, "epoch_step": 5, "steps_in_epoch": 10, "time_s": 12.75, "loss": 0.123456789, "accuracy": 0.5, "learning_rate": 0.05, "samples_per_s": 1234.5, "data_wait_ms": 1.25, "offload_ratio": 0.3, "eta_s": null})");
}

TEST(RunRecorder, StepsLineEndsWithTheGradientNormWhenClipping) {
  StepReport s = step_report();
  s.grad_norm = 3.25;
  EXPECT_EQ(
      steps_json_line(s),
      std::string(
          R"({"step": 15, "epoch": 2, "epoch_step": 5, "steps_in_epoch": 10, "time_s": 12.75, "loss": 0.123456789, "accuracy": 0.5, "learning_rate": 0.05, "samples_per_s": 1234.5, "data_wait_ms": 1.25, "offload_ratio": 0.3, "eta_s": null})")
              .substr(
                  0,
                  std::string(
                      R"({"step": 15, "epoch": 2, "epoch_step": 5, "steps_in_epoch": 10, "time_s": 12.75, "loss": 0.123456789, "accuracy": 0.5, "learning_rate": 0.05, "samples_per_s": 1234.5, "data_wait_ms": 1.25, "offload_ratio": 0.3, "eta_s": null})")
                          .size() -
                      1) +
          R"(, "grad_norm": 3.25})");
  // What conflux report reads back is the same value.
  telemetry::StepRecord back;
  telemetry::read_record(parse_json(steps_json_line(s), "steps.jsonl:1"), "steps.jsonl:1", back);
  ASSERT_TRUE(back.grad_norm.has_value());
  EXPECT_EQ(*back.grad_norm, 3.25);
}

TEST(RunRecorder, MetricsLineIsByteIdenticalToTheFormerWriter) {
  EpochReport e = epoch_report();
  EXPECT_EQ(
      metrics_json_line(e),
      R"({"epoch": 3, "train_loss": 0.4, "train_accuracy": 0.9, "test_loss": null, "test_accuracy": null, "samples": 6000, "samples_per_s": 999.25, "epoch_seconds": 6.5, "eval_seconds": 0, "elapsed_seconds": 20.125, "local_batches": 5, "worker_batches": 7, "fallback_batches": 1, "audited": true})");
  e.noise_steps = 12;
  e.noise_scale = std::nan("");
  e.grad_norm2 = 0.001;
  e.grad_trace = 3.5;
  e.audited = false;
  EXPECT_EQ(
      metrics_json_line(e),
      R"({"epoch": 3, "train_loss": 0.4, "train_accuracy": 0.9, "test_loss": null, "test_accuracy": null, "samples": 6000, "samples_per_s": 999.25, "epoch_seconds": 6.5, "eval_seconds": 0, "elapsed_seconds": 20.125, "local_batches": 5, "worker_batches": 7, "fallback_batches": 1, "audited": false, "noise_steps": 12, "noise_scale": null, "grad_norm2": 0.001, "grad_trace": 3.5})");
}

TEST(RunRecorder, ProfileLineIsByteIdenticalToTheFormerWriter) {
  offload::WindowReport w;
  w.start_s = 1.5;
  w.seconds = 0.25;
  w.first_step = 20;
  w.steps = 4;
  w.total.data_wait = 0.01;
  w.total.compute = 0.2;
  w.total.sync = 0.001;
  w.total.callbacks = 0.0005;
  w.offload_ratio = 0.4;
  w.local_build_rate = 55.5;
  w.local_built = 3;
  w.delivered = 4;
  w.input.wait_local_s = 0.004;
  w.input.wait_remote_s = 0.006;
  w.workers.push_back({true, 2, 0, 40.0, 0.75, 1, 2});
  w.workers.push_back({false, 0, 1, 0.0, 0.0, 0, 0});
  EXPECT_EQ(
      offload::profile_json_line(w, 1),
      R"({"trainer": 1, "t_s": 1.5, "window_s": 0.25, "first_step": 20, "steps": 4, "steps_per_s": 16, "data_wait_ms": 2.5, "compute_ms": 50, "sync_ms": 0.25, "callbacks_ms": 0.125, "wait_local_s": 0.004, "wait_remote_s": 0.006, "offload_ratio": 0.4, "local_built": 3, "local_batches_per_s": 55.5, "delivered": 4, "workers": [{"worker": 0, "live": true, "answers": 2, "timeouts": 0, "service_batches_per_s": 40, "busy_fraction": 0.75, "queue_depth": 1, "in_flight": 2}, {"worker": 1, "live": false, "answers": 0, "timeouts": 1, "service_batches_per_s": 0, "busy_fraction": 0, "queue_depth": 0, "in_flight": 0}]})");
  EXPECT_EQ(
      offload::profile_json_line(offload::WindowReport{}, 0),
      R"({"trainer": 0, "t_s": 0, "window_s": 0, "first_step": 0, "steps": 0, "steps_per_s": 0, "data_wait_ms": 0, "compute_ms": 0, "sync_ms": 0, "callbacks_ms": 0, "wait_local_s": 0, "wait_remote_s": 0, "offload_ratio": 0, "local_built": 0, "local_batches_per_s": 0, "delivered": 0, "workers": []})");
}

}  // namespace
}  // namespace conflux::train
