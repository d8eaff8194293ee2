#include "conflux/data/service/batch_server.hpp"

#include <algorithm>
#include <thread>

#include "conflux/comm/mpi.hpp"
#include "conflux/core/backoff.hpp"
#include "conflux/core/cpu_time.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {

namespace {
constexpr std::size_t kPlansKept = 3;  // epochs whose plans a worker keeps
}  // namespace

BatchServer::BatchServer(BatchServerOptions options)
    : options_(std::move(options)),
      builder_(*options_.source, *options_.transform, options_.threads, options_.decoding),
      queues_(options_.trainer_ranks.size()),
      said_goodbye_(options_.trainer_ranks.size(), false),
      slots_(static_cast<std::size_t>(options_.send_buffers)) {
  stats_.per_trainer.assign(options_.trainer_ranks.size(), 0);
  if (options_.source->info().streamed) fetcher_.emplace(*options_.source, options_.cache_bytes);
}

const EpochPlan& BatchServer::plan(std::uint32_t epoch) {
  auto it = plans_.find(epoch);
  if (it != plans_.end()) return it->second;
  if (plans_.size() >= kPlansKept) plans_.erase(plans_.begin());
  return plans_
      .try_emplace(epoch, options_.seed, epoch, options_.source->size(), options_.global_batch,
                   static_cast<int>(options_.trainer_ranks.size()))
      .first->second;
}

bool BatchServer::faulty_now() const {
  return options_.fault.mode != WorkerFault::Mode::kNone && answers_ >= options_.fault.after;
}

std::size_t BatchServer::queued_requests() const {
  std::size_t n = 0;
  for (const auto& q : queues_) n += q.size();
  return n;
}

bool BatchServer::done() const {
  return goodbyes_ == static_cast<int>(options_.trainer_ranks.size()) &&
         std::none_of(slots_.begin(), slots_.end(), [](const SendSlot& s) { return s.busy; }) &&
         small_sends_.empty();
}

void BatchServer::handle(const Request& request, int source) {
  const int t = request.trainer;
  CONFLUX_CHECK(t >= 0 && static_cast<std::size_t>(t) < queues_.size() &&
                    options_.trainer_ranks[static_cast<std::size_t>(t)] == source,
                "data service: worker {} got a request naming trainer {} from rank {}",
                options_.worker, t, source);
  const auto ti = static_cast<std::size_t>(t);
  CONFLUX_CHECK(!said_goodbye_[ti], "data service: trainer {} sent a request after its goodbye", t);
  if (request.kind == RequestKind::kGoodbye) {
    said_goodbye_[ti] = true;
    ++goodbyes_;
    refuse_queued(t, ReplyStatus::kCancelled);
    // Answers held back by fault injection go out now: the trainer drops them anyway.
    for (auto& slot : slots_) {
      if (slot.busy && !slot.posted && slot.trainer == t) slot.not_before = Clock::now();
    }
    return;
  }
  CONFLUX_CHECK(request.kind == RequestKind::kBatch,
                "data service: unknown request kind {} from rank {}",
                static_cast<unsigned>(request.kind), source);
  // The trainer's plan divides the step (data::BatchSplit); the batch must lie within it.
  const BatchRange step = plan(request.epoch).step_range(request.step);
  CONFLUX_CHECK(request.begin >= step.begin && request.begin + request.samples <= step.end,
                "data service: trainer {} asked for plan positions [{}, {}) outside epoch {} "
                "step {} ([{}, {}))",
                t, request.begin, request.begin + request.samples, request.epoch, request.step,
                step.begin, step.end);
  Queued& queued = queues_[ti].emplace_back(Queued{request, std::nullopt});
  if (fetcher_) {
    queued.ticket = fetcher_->enqueue(
        plan(request.epoch).samples(BatchRange{request.begin, request.begin + request.samples}));
  }
  if (leaving_) refuse_queued(t, ReplyStatus::kLeaving);
}

// A stop signal asks this worker to leave: what is queued is refused, and so is every request
// still to come, so the trainers learn it left and build its batches themselves; it goes on
// receiving until every trainer has said goodbye, so that nothing is left unanswered.
void BatchServer::leave_on_signal() {
  if (leaving_ || !options_.stop_signal) return;
  const int signal = options_.stop_signal();
  if (signal == 0) return;
  leaving_ = true;
  std::size_t queued = 0;
  for (std::size_t t = 0; t < queues_.size(); ++t) {
    queued += queues_[t].size();
    refuse_queued(static_cast<int>(t), ReplyStatus::kLeaving);
  }
  if (options_.log != nullptr) {
    options_.log->warn(
        "worker {}: stop signal {} received: leaving the data service ({} queued request(s) "
        "refused); the trainers build its batches themselves",
        options_.worker, signal, queued);
  }
}

void BatchServer::refuse_queued(int trainer, ReplyStatus why) {
  auto& queue = queues_[static_cast<std::size_t>(trainer)];
  const int rank = options_.trainer_ranks[static_cast<std::size_t>(trainer)];
  const MPI_Comm comm = options_.comm->get();
  for (const Queued& q : queue) {
    const Request& r = q.request;
    if (q.ticket) fetcher_->drop(*q.ticket);  // its samples will not be built here
    SmallSend& send = small_sends_.emplace_back();
    ReplyHeader h{r.sequence, r.step, r.epoch, r.trainer, 0, why, 0};
    encode_meta(h, {}, {}, send.meta);
    // The trainer posted one receive per image chunk of the planned batch: answer each, empty.
    const std::size_t chunks = chunk_count(r.samples, builder_.bytes_per_sample());
    send.requests.assign(chunks + 1, MPI_REQUEST_NULL);
    for (std::size_t c = 0; c < chunks; ++c) {
      CONFLUX_MPI_CHECK(
          MPI_Isend(nullptr, 0, MPI_BYTE, rank, image_tag(r.sequence), comm, &send.requests[c]));
    }
    CONFLUX_MPI_CHECK(MPI_Isend(send.meta.data(), static_cast<int>(send.meta.size()), MPI_BYTE,
                                rank, meta_tag(r.sequence), comm, &send.requests[chunks]));
    ++(why == ReplyStatus::kLeaving ? stats_.refused : stats_.cancelled);
  }
  queue.clear();
}

bool BatchServer::receive_requests() {
  bool any = false;
  for (;;) {
    int done = 0;
    MPI_Status status;
    CONFLUX_MPI_CHECK(MPI_Test(&receive_, &done, &status));
    if (!done) return any;
    any = true;
    handle(incoming_, status.MPI_SOURCE);
    if (goodbyes_ == static_cast<int>(options_.trainer_ranks.size())) return any;
    CONFLUX_MPI_CHECK(MPI_Irecv(&incoming_, sizeof(Request), MPI_BYTE, MPI_ANY_SOURCE, kRequestTag,
                                options_.comm->get(), &receive_));
  }
}

void BatchServer::post_chunk(SendSlot& slot, std::size_t chunk) {
  const int rank = options_.trainer_ranks[static_cast<std::size_t>(slot.trainer)];
  const std::size_t bps = builder_.bytes_per_sample();
  const std::size_t first = chunk * chunk_samples(bps) * bps;
  const std::size_t count = std::min(chunk_samples(bps) * bps, slot.images.size() - first);
  MPI_Request& request = slot.requests.emplace_back(MPI_REQUEST_NULL);
  CONFLUX_MPI_CHECK(MPI_Isend(slot.images.data() + first, static_cast<int>(count), MPI_BYTE, rank,
                              image_tag(slot.request.sequence), options_.comm->get(), &request));
}

void BatchServer::post_meta(SendSlot& slot) {
  const int rank = options_.trainer_ranks[static_cast<std::size_t>(slot.trainer)];
  MPI_Request& request = slot.requests.emplace_back(MPI_REQUEST_NULL);
  CONFLUX_MPI_CHECK(MPI_Isend(slot.meta.data(), static_cast<int>(slot.meta.size()), MPI_BYTE, rank,
                              meta_tag(slot.request.sequence), options_.comm->get(), &request));
  slot.posted = true;
}

bool BatchServer::complete_sends() {
  bool any = false;
  const auto now = Clock::now();
  for (auto& slot : slots_) {
    if (!slot.busy) continue;
    if (!slot.posted) {
      if (now < slot.not_before) continue;
      const std::size_t chunks = chunk_count(slot.labels.size(), builder_.bytes_per_sample());
      for (std::size_t c = 0; c < chunks; ++c) post_chunk(slot, c);
      post_meta(slot);
      any = true;
    }
    int done = 0;
    CONFLUX_MPI_CHECK(MPI_Testall(static_cast<int>(slot.requests.size()), slot.requests.data(),
                                  &done, MPI_STATUSES_IGNORE));
    if (done) {
      slot.busy = slot.posted = false;
      any = true;
    }
  }
  while (!small_sends_.empty()) {
    int done = 0;
    auto& requests = small_sends_.front().requests;
    CONFLUX_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                                  MPI_STATUSES_IGNORE));
    if (!done) break;
    small_sends_.pop_front();
    any = true;
  }
  return any;
}

bool BatchServer::build_next() {
  if (options_.fault.mode == WorkerFault::Mode::kStop && faulty_now()) return false;
  auto free_slot =
      std::find_if(slots_.begin(), slots_.end(), [](const SendSlot& s) { return !s.busy; });
  if (free_slot == slots_.end()) return false;
  const std::optional<std::size_t> trainer = next_queue();
  if (!trainer) return false;
  SendSlot& slot = *free_slot;
  const Queued queued = queues_[*trainer].front();
  queues_[*trainer].pop_front();
  slot.request = queued.request;
  slot.trainer = static_cast<int>(*trainer);

  const auto start = Clock::now();
  const bool delayed = options_.fault.mode == WorkerFault::Mode::kDelay && faulty_now();
  const auto samples =
      plan(slot.request.epoch)
          .samples(BatchRange{slot.request.begin, slot.request.begin + slot.request.samples});
  const SampleBytes fetched = queued.ticket ? fetcher_->take(*queued.ticket) : SampleBytes{};
  build_and_send(slot, samples, fetched, delayed);
  if (options_.fault.mode == WorkerFault::Mode::kSlow && faulty_now()) slow_down(start);
  const double build_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  load_.record(start, Clock::now());
  if (options_.timeline != nullptr && options_.timeline->enabled()) {
    options_.timeline->span(
        "build batch", "data", start, Clock::now(),
        fmt::format("{{\"trainer\": {}, \"epoch\": {}, \"step\": {}, \"queued\": {}}}",
                    slot.trainer, slot.request.epoch, slot.request.step, queued_requests()));
  }
  answer(slot, samples, build_seconds, delayed);
  count_answer(*trainer, samples.size());
  return true;
}

std::optional<std::size_t> BatchServer::next_queue() {
  const std::size_t n = queues_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t t = (next_trainer_ + k) % n;
    if (queues_[t].empty()) continue;
    next_trainer_ = (t + 1) % n;
    return t;
  }
  return std::nullopt;
}

void BatchServer::build_and_send(SendSlot& slot, std::span<const std::uint32_t> samples,
                                 std::span<const std::vector<std::uint8_t>> fetched, bool delayed) {
  const std::size_t bps = builder_.bytes_per_sample();
  const std::size_t per_chunk = chunk_samples(bps);
  slot.images.resize(samples.size() * bps);
  slot.labels.resize(samples.size());
  slot.requests.clear();
  // Send each chunk as soon as it is built, so the trainer copies it while it is still in
  // cache and while the next chunk is being built.
  for (std::size_t c = 0, first = 0; first < samples.size(); ++c, first += per_chunk) {
    const std::size_t n = std::min(per_chunk, samples.size() - first);
    builder_.build_train_encoded(samples.subspan(first, n), options_.seed, slot.request.epoch,
                                 slot.images.data() + first * bps, slot.labels.data() + first,
                                 fetched.empty() ? fetched : fetched.subspan(first, n));
    if (!delayed) post_chunk(slot, c);
  }
}

void BatchServer::slow_down(Clock::time_point build_start) {
  // A slower worker: the build takes `factor` times as long (the extra as a wait that keeps
  // the sends of earlier answers moving, as a worker busy building would).
  const auto until = Clock::now() + (Clock::now() - build_start) * (options_.fault.factor - 1);
  while (Clock::now() < until) {
    complete_sends();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void BatchServer::answer(SendSlot& slot, std::span<const std::uint32_t> samples,
                         double build_seconds, bool delayed) {
  ReplyHeader header{slot.request.sequence,
                     slot.request.step,
                     slot.request.epoch,
                     slot.request.trainer,
                     static_cast<std::uint32_t>(samples.size()),
                     ReplyStatus::kBatch,
                     builder_.floats_per_sample()};
  header.encoding = builder_.encoding();
  header.build_seconds = static_cast<float>(build_seconds);
  header.busy_fraction = static_cast<float>(load_.busy_fraction(Clock::now()));
  header.queued = static_cast<std::uint32_t>(queued_requests());
  encode_meta(header, samples, slot.labels, slot.meta);
  if (!delayed) post_meta(slot);
  stats_.build_seconds += build_seconds;
  slot.busy = true;
  slot.not_before =
      Clock::now() + (delayed ? std::chrono::duration_cast<Clock::duration>(options_.fault.delay)
                              : Clock::duration::zero());
}

void BatchServer::count_answer(std::size_t trainer, std::size_t samples) {
  ++answers_;
  ++stats_.batches;
  ++stats_.per_trainer[trainer];
  stats_.samples += samples;
  std::uint64_t in_flight = 0;
  for (const auto& s : slots_) {
    if (s.busy) in_flight += s.images.size() + s.meta.size();
  }
  stats_.peak_bytes_in_flight = std::max(stats_.peak_bytes_in_flight, in_flight);
}

void BatchServer::send_done() {
  if (options_.trainer_ranks.empty()) return;
  done_message_ = options_.worker;  // a member: the send may read it after a timeout
  MPI_Request request = MPI_REQUEST_NULL;
  CONFLUX_MPI_CHECK(MPI_Isend(&done_message_, 1, MPI_INT32_T, options_.trainer_ranks[0], kDoneTag,
                              options_.comm->get(), &request));
  const auto start = Clock::now();
  Backoff backoff(std::chrono::microseconds(20), std::chrono::microseconds(1000));
  for (;;) {
    int done = 0;
    CONFLUX_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (Clock::now() - start > options_.drain_timeout) {
      MPI_Request_free(&request);  // trainer 0 is gone; the agreed exit will say so
      CONFLUX_RUNTIME_ERROR(
          "data service: worker {} could not tell trainer 0 it is done within "
          "{:.1f} s",
          options_.worker, options_.drain_timeout.count());
    }
    backoff.pause();
  }
}

BatchServerStats BatchServer::serve() {
  const auto start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  if (options_.fault.mode != WorkerFault::Mode::kNone && options_.log != nullptr) {
    options_.log->warn(
        "fault injection: worker {} will {} after {} answer(s)", options_.worker,
        options_.fault.mode == WorkerFault::Mode::kStop ? std::string("stop answering")
        : options_.fault.mode == WorkerFault::Mode::kSlow
            ? fmt::format("build {:.3g} times slower", options_.fault.factor)
            : fmt::format("delay every answer by {:.3g} s", options_.fault.delay.count()),
        options_.fault.after);
  }
  if (!options_.trainer_ranks.empty()) {
    CONFLUX_MPI_CHECK(MPI_Irecv(&incoming_, sizeof(Request), MPI_BYTE, MPI_ANY_SOURCE, kRequestTag,
                                options_.comm->get(), &receive_));
  }
  Backoff backoff(std::chrono::microseconds(20), std::chrono::microseconds(100));
  Clock::time_point drain_start{};
  while (!done()) {
    bool active = false;
    leave_on_signal();
    if (goodbyes_ < static_cast<int>(options_.trainer_ranks.size())) {
      active |= receive_requests();
    } else if (drain_start == Clock::time_point{}) {
      drain_start = Clock::now();
    }
    active |= complete_sends();
    active |= build_next();
    if (active) {
      backoff.reset();
      continue;
    }
    if (drain_start != Clock::time_point{} && Clock::now() - drain_start > options_.drain_timeout) {
      CONFLUX_RUNTIME_ERROR(
          "data service: worker {} timed out after {:.1f} s delivering its last answers",
          options_.worker, options_.drain_timeout.count());
    }
    // Idle: sleep, growing the pause, so that a waiting worker costs no CPU.
    backoff.pause();
  }
  send_done();
  stats_.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stats_.cpu_seconds = process_cpu_seconds() - cpu_start;
  stats_.skipped = builder_.skipped();
  if (fetcher_) stats_.fetcher = fetcher_->stats();
  return stats_;
}

}  // namespace conflux::data
