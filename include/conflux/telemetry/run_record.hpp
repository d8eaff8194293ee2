#pragma once
/// @file run_record.hpp
/// Every JSON Lines record a run writes into its directory, declared once: a steps.jsonl line
/// (StepRecord), a metrics.jsonl line (EpochRecord), a profile-trainer<t>.jsonl line
/// (WindowRecord, with a WorkerRecord per worker) and a decisions-trainer<t>.jsonl line
/// (DecisionRecord). Each has one field list below, from which its struct is made; the writers
/// (train, offload), `conflux report`'s readers and the TensorBoard tags all walk that list
/// through telemetry/run_record_io.hpp, so adding a field is one entry here plus setting its
/// value where the record is filled (docs/report.md, "Adding a field to a run record").
///
/// Each list macro takes one macro, applied to every field in the order of the JSON object:
///
///   F(name, C++ type, required, TensorBoard tag, doc)
///
/// - `name` is both the struct member and the JSON key.
/// - The type is a number (`double`, or an integer type: written as an integer), `bool`,
///   `std::string`, `std::vector<R>` of another record (a JSON array of objects), or
///   `std::optional<T>` of those: a field left out of the line while it is unset.
/// - `required`: a reader refuses a line without it (the fields a line is placed by).
/// - The tag names the field's TensorBoard scalar ("" for none); a NaN or unset value is
///   not written there.
/// A member starts unset (record_unset()): NaN for a double (JSON null), 0, false, empty. A
/// reader leaves a field the line lacks as it was, so a fresh record reads it as unset.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace conflux::telemetry {

/// What a field list says of a field besides its member.
struct FieldInfo {
  std::string_view name;  ///< the JSON key (and the member's name)
  bool required;          ///< a reader refuses a line without it
  std::string_view tag;   ///< TensorBoard tag; empty: not written there
  std::string_view doc;   ///< what the value is
};

/// The value a field holds until it is set: NaN for floating point (written as null), else
/// the value-initialised one (0, false, empty, no value).
template <typename T>
constexpr T record_unset() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else {
    return T{};
  }
}

}  // namespace conflux::telemetry

/// A struct member of a field list entry.
#define CONFLUX_RECORD_MEMBER(name, type, required, tag, doc) \
  type name = ::conflux::telemetry::record_unset<type>();
/// One call of for_each_field's visitor.
#define CONFLUX_RECORD_VISIT(name, type, required, tag, doc) \
  visit(::conflux::telemetry::FieldInfo{#name, required, tag, doc}, self.name);
/// A record struct from its field list: the members, and `for_each_field(record, visit)`,
/// which calls visit(FieldInfo, member) for every field in list order (also on a struct
/// derived from the record).
#define CONFLUX_DEFINE_RECORD(Record, FIELDS)               \
  struct Record {                                           \
    FIELDS(CONFLUX_RECORD_MEMBER)                           \
    template <typename Self, typename Visit>                \
    static void for_each_field(Self& self, Visit&& visit) { \
      FIELDS(CONFLUX_RECORD_VISIT)                          \
    }                                                       \
  };

// clang-format off
/// steps.jsonl: rank 0's report every train.log_every steps and at each epoch's end, global
/// over the trainers, of the steps since the previous report.
#define CONFLUX_STEP_RECORD_FIELDS(F)                                                            \
  F(step, std::size_t, true, "",                                                                 \
    "Global steps completed (a resumed run continues the count).")                               \
  F(epoch, std::size_t, false, "", "The epoch, 1-based.")                                        \
  F(epoch_step, std::size_t, false, "", "The step within the epoch, 1-based.")                   \
  F(steps_in_epoch, std::size_t, false, "", "Steps per epoch.")                                  \
  F(time_s, double, false, "", "Seconds since training began, earlier launches included.")       \
  F(loss, double, false, "train/loss", "Mean training loss since the previous report.")          \
  F(accuracy, double, false, "train/accuracy", "Training accuracy since the previous report.")   \
  F(learning_rate, double, false, "train/learning_rate", "The rate of the step just trained.")   \
  F(samples_per_s, double, false, "throughput/samples_per_s",                                    \
    "Global training samples per second since the previous report.")                             \
  F(data_wait_ms, double, false, "input/data_wait_ms",                                           \
    "Mean wait for a batch per step and trainer since the previous report.")                     \
  F(offload_ratio, double, false, "input/offload_ratio", "Rank 0's offload ratio now.")          \
  F(eta_s, double, false, "",                                                                    \
    "Remaining seconds at this launch's mean step rate (evaluation included).")                  \
  F(grad_norm, std::optional<double>, false, "train/grad_norm",                                  \
    "With train.clip_grad_norm: the L2 norm of the step's merged gradient before clipping "      \
    "(of the report's last step).")

/// metrics.jsonl: one epoch's results, global over the trainers.
#define CONFLUX_EPOCH_RECORD_FIELDS(F)                                                           \
  F(epoch, std::size_t, true, "epoch/epoch", "The epoch, 1-based.")                              \
  F(train_loss, double, false, "epoch/train_loss", "Mean training loss of the epoch.")           \
  F(train_accuracy, double, false, "epoch/train_accuracy", "Training accuracy of the epoch.")    \
  F(test_loss, double, false, "epoch/test_loss", "Test loss; null when evaluation is off.")      \
  F(test_accuracy, double, false, "epoch/test_accuracy",                                         \
    "Test accuracy; null when evaluation is off.")                                               \
  F(samples, std::size_t, false, "", "Training samples of the epoch.")                           \
  F(samples_per_s, double, false, "epoch/samples_per_s",                                         \
    "Training samples per second (evaluation excluded).")                                        \
  F(epoch_seconds, double, false, "", "Training time of the epoch (evaluation excluded).")       \
  F(eval_seconds, double, false, "", "Evaluation time after the epoch.")                         \
  F(elapsed_seconds, double, false, "", "Seconds since training began, at the epoch's end.")     \
  F(local_batches, std::size_t, false, "", "Batches built by the trainers themselves.")          \
  F(worker_batches, std::size_t, false, "", "Batches built by worker ranks.")                    \
  F(fallback_batches, std::size_t, false, "",                                                    \
    "Batches the trainers built after a worker timed out.")                                      \
  F(audited, bool, false, "", "data.audit verified that every sample was used once.")            \
  F(noise_steps, std::optional<std::size_t>, false, "",                                          \
    "train.noise_scale: the epoch's steps that estimated the gradient noise scale.")             \
  F(noise_scale, std::optional<double>, false, "",                                               \
    "B_noise = tr(Sigma) / |G|^2; null when not positive.")                                      \
  F(grad_norm2, std::optional<double>, false, "", "|G|^2 of the noise scale.")                   \
  F(grad_trace, std::optional<double>, false, "", "tr(Sigma) of the noise scale.")

/// One element of a profile window's workers array: one worker as one trainer saw it.
#define CONFLUX_WORKER_RECORD_FIELDS(F)                                                          \
  F(worker, std::size_t, false, "", "The worker's index.")                                       \
  F(live, bool, false, "", "Still answering.")                                                   \
  F(answers, std::uint64_t, false, "", "Its answers used in the window.")                        \
  F(timeouts, std::uint64_t, false, "", "Requests to it given up in the window.")                \
  F(service_batches_per_s, double, false, "",                                                    \
    "Batches/s it can build (1 / its latest service time).")                                     \
  F(busy_fraction, double, false, "", "Its latest reported busy share.")                         \
  F(queue_depth, std::uint32_t, false, "", "Requests waiting at it (latest report).")            \
  F(in_flight, std::uint32_t, false, "", "This trainer's requests outstanding at it.")

/// profile-trainer<t>.jsonl: one measuring window of one trainer (offload/window_meter).
#define CONFLUX_WINDOW_RECORD_FIELDS(F)                                                          \
  F(trainer, int, false, "", "The trainer.")                                                     \
  F(t_s, double, true, "", "The window's start on the trainer's profile clock.")                 \
  F(window_s, double, false, "", "The window's length in seconds.")                              \
  F(first_step, std::size_t, false, "", "Steps this process had recorded before the window.")   \
  F(steps, std::size_t, false, "", "Steps in the window.")                                       \
  F(steps_per_s, double, false, "", "Step rate over the window.")                                \
  F(data_wait_ms, double, false, "", "Mean data wait per step.")                                 \
  F(compute_ms, double, false, "", "Mean forward and backward time per step.")                   \
  F(sync_ms, double, false, "", "Mean gradient exchange and update time per step.")             \
  F(callbacks_ms, double, false, "", "Mean callback time per step.")                             \
  F(wait_local_s, double, false, "", "Data wait for locally built batches (loader's clock).")   \
  F(wait_remote_s, double, false, "", "Data wait for the workers' batches (loader's clock).")    \
  F(offload_ratio, double, false, "", "The ratio in force at the window's end.")                 \
  F(local_built, std::size_t, false, "", "Batches the trainer's own threads built.")             \
  F(local_batches_per_s, double, false, "", "Batches/s the trainer's own threads can build.")    \
  F(delivered, std::size_t, false, "", "Batches the training loop received.")                    \
  F(workers, std::vector<WorkerRecord>, false, "", "Each worker as this trainer saw it.")

/// decisions-trainer<t>.jsonl: one decision of a trainer's offload-ratio controller.
#define CONFLUX_DECISION_RECORD_FIELDS(F)                                                        \
  F(trainer, int, false, "", "The trainer.")                                                     \
  F(step, std::size_t, false, "", "Global steps completed when it was taken.")                   \
  F(t_s, double, true, "", "When, on the trainer's profile clock.")                              \
  F(from, double, false, "", "The ratio before.")                                                \
  F(to, double, true, "", "The ratio chosen.")                                                   \
  F(reason, std::string, false, "", "Why, in words.")
// clang-format on

namespace conflux::telemetry {

/// A steps.jsonl line (CONFLUX_STEP_RECORD_FIELDS).
CONFLUX_DEFINE_RECORD(StepRecord, CONFLUX_STEP_RECORD_FIELDS)
/// A metrics.jsonl line (CONFLUX_EPOCH_RECORD_FIELDS).
CONFLUX_DEFINE_RECORD(EpochRecord, CONFLUX_EPOCH_RECORD_FIELDS)
/// A worker in a profile window (CONFLUX_WORKER_RECORD_FIELDS).
CONFLUX_DEFINE_RECORD(WorkerRecord, CONFLUX_WORKER_RECORD_FIELDS)
/// A profile-trainer<t>.jsonl line (CONFLUX_WINDOW_RECORD_FIELDS).
CONFLUX_DEFINE_RECORD(WindowRecord, CONFLUX_WINDOW_RECORD_FIELDS)
/// A decisions-trainer<t>.jsonl line (CONFLUX_DECISION_RECORD_FIELDS).
CONFLUX_DEFINE_RECORD(DecisionRecord, CONFLUX_DECISION_RECORD_FIELDS)

}  // namespace conflux::telemetry
