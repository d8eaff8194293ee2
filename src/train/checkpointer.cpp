#include "conflux/train/checkpointer.hpp"

#include <array>

#include "conflux/core/elapsed.hpp"

namespace conflux::train {

namespace {
constexpr std::size_t kAgreeEvery = 8;
}  // namespace

Checkpointer::Checkpointer(const CheckpointerOptions& o)
    : config_(o.config),
      trainers_(o.trainers),
      signals_(o.signals),
      log_(o.log),
      timeline_(o.timeline),
      timeout_(o.config.cluster().peer_timeout_s),
      last_taken_(SteadyClock::now()) {
  if (trainers_.rank() == 0) {
    const auto& c = config_.checkpoint();
    writer_.emplace(ckpt::CheckpointStore(c.dir, c.keep), o.resumed_from);
  }
}

void Checkpointer::on_step_end(StepContext& context) {
  const auto& c = config_.checkpoint();
  const auto agree_start = SteadyClock::now();
  // A signal may reach only some ranks, and the clock and the writer live on trainer 0, yet
  // every trainer must decide alike: the flags are summed over the trainers, every
  // kAgreeEvery steps. The sum started then completes one step later, so it never waits on
  // the network; signals and timers act within kAgreeEvery + 1 steps.
  std::array<double, 3> flags{};
  if (agreement_.active()) {
    agreement_.wait(timeout_, "the trainers' checkpoint agreement");
    flags = agreement_flags_;
  }
  const std::size_t step = context.global_step();
  if (step < context.total_steps() && step % kAgreeEvery == 0) {
    agreement_flags_ = {
        signals_ != nullptr && signals_->received() != 0 ? 1.0 : 0.0,
        writer_ && c.every_seconds > 0 && seconds_since(last_taken_) >= c.every_seconds ? 1.0 : 0.0,
        writer_ && writer_->failed() ? 1.0 : 0.0};
    agreement_ = trainers_.start_allreduce_sum(agreement_flags_);
  }
  stats_.agree_seconds += seconds_since(agree_start);
  if (flags[2] > 0) {
    // Every trainer fails here at once and the job ends with MPI_Abort, which (under MPICH)
    // can kill trainer 0 before it prints why: it says so first, and the others wait for that.
    if (writer_ && log_ != nullptr) log_->error("{}", writer_->error());
    trainers_.barrier();
    if (writer_) CONFLUX_RUNTIME_ERROR("{}", writer_->error());
    CONFLUX_RUNTIME_ERROR("trainer 0 could not write a checkpoint (its log says why)");
  }
  const bool by_steps = c.every_steps > 0 && step % static_cast<std::size_t>(c.every_steps) == 0;
  const bool last = c.final && step == context.total_steps();
  const bool signalled = flags[0] > 0;
  if (!(by_steps || last || signalled || flags[1] > 0)) return;
  take(context);
  if (!signalled) return;
  agreement_.wait(timeout_, "the trainers' checkpoint agreement");  // none left in flight
  stop_signal_ = signals_->received() != 0 ? signals_->received() : -1;
  if (writer_) {
    writer_->flush();  // durable before the job exits for requeue
    if (log_ != nullptr) {
      log_->info(
          "stop requested by {}: checkpoint at step {} written to {}; exiting with 75 to "
          "be requeued",
          stop_signal_ > 0 ? ckpt::StopSignals::name(stop_signal_) : "a signal on another rank",
          step, writer_->last_published().string());
    }
  }
  context.request_stop();
}

void Checkpointer::take(StepContext& context) {
  const auto start = SteadyClock::now();
  if (writer_) {
    ckpt::TrainingState state = writer_->take_buffer();
    context.capture(state);
    writer_->submit(std::move(state));
  } else {
    context.capture(scratch_);
  }
  const double stall = seconds_since(start);
  if (timeline_ != nullptr && timeline_->enabled()) {
    timeline_->span("checkpoint capture", "checkpoint", start, SteadyClock::now(),
                    fmt::format("{{\"global_step\": {}}}", context.global_step()));
  }
  ++stats_.taken;
  stats_.stall_seconds += stall;
  stats_.max_stall_seconds = std::max(stats_.max_stall_seconds, stall);
  last_taken_ = SteadyClock::now();
  if (writer_ && log_ != nullptr) {
    log_->info("checkpoint at step {}: captured in {:.1f} ms, writing {} in the background",
               context.global_step(), 1e3 * stall,
               writer_->store().path_for(context.global_step()).string());
  }
}

void Checkpointer::on_train_end(const model::Model& /*model*/, const TrainSummary& /*summary*/) {
  if (writer_) writer_->flush();
}

std::filesystem::path Checkpointer::last_checkpoint() const {
  return writer_ ? writer_->last_published() : std::filesystem::path();
}

CheckpointerStats Checkpointer::stats() const {
  CheckpointerStats s = stats_;
  if (writer_) s.persist = writer_->stats();
  return s;
}

}  // namespace conflux::train
