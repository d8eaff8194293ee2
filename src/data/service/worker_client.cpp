#include "conflux/data/service/worker_client.hpp"

#include <fmt/ranges.h>

#include <algorithm>

#include "conflux/comm/mpi.hpp"
#include "conflux/core/backoff.hpp"
#include "conflux/core/error.hpp"

namespace conflux::data {

WorkerClient::WorkerClient(WorkerClientOptions options) : options_(std::move(options)) {
  CONFLUX_REQUIRE(options_.comm != nullptr || options_.worker_ranks.empty(),
                  "WorkerClient needs a communicator when there are workers");
  CONFLUX_REQUIRE(options_.transform != nullptr, "WorkerClient needs the training transform");
  for (int rank : options_.worker_ranks) workers_.emplace_back().rank = rank;
}

WorkerClient::~WorkerClient() {
  // Only reached with receives still posted when training failed; MPI_Abort follows, so
  // cancelling is enough to leave no request pointing into freed memory.
  const auto cancel = [](Pending& p) {
    for (auto& r : p.requests) {
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
    }
  };
  for (auto& [batch, p] : pending_) cancel(p);
  for (auto& o : orphans_) cancel(o.pending);
  for (auto& r : done_receives_) {
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
  }
}

bool WorkerClient::any_live_worker() const {
  const auto now = Clock::now();
  // A worker whose every credit is held by given-up requests frees none unless it is still
  // alive: waiting for it would hang the trainer when it is dead (docs/data-service.md,
  // "Losing a worker").
  return std::any_of(workers_.begin(), workers_.end(), [&](const WorkerState& w) {
    return !w.left && w.skip_until <= now &&
           (w.in_flight < options_.credits || w.in_flight > w.given_up);
  });
}

void WorkerClient::send(int worker, const Request& message) {
  Outgoing& out = outgoing_.emplace_back();
  out.message = message;
  CONFLUX_MPI_CHECK(MPI_Isend(&out.message, sizeof(Request), MPI_BYTE, workers_[worker].rank,
                              kRequestTag, options_.comm->get(), &out.request));
}

std::vector<int> WorkerClient::batch_shape(std::size_t samples) const {
  const ImageShape s = options_.transform->output_shape();
  return {static_cast<int>(samples), s.channels, s.height, s.width};
}

std::size_t WorkerClient::bytes_per_sample() const {
  return options_.transform->output_shape().size() *
         value_bytes(image_encoding(*options_.transform));
}

// A buffer for a request's pixels: a spare one, else an empty one from options_.pixel_memory.
// Spares are reused because a fresh buffer costs a page fault per page (and pinning, where the
// memory is pinned).
PixelBuffer WorkerClient::pixel_buffer() {
  if (!spare_pixels_.empty()) {
    PixelBuffer spare = std::move(spare_pixels_.back());
    spare_pixels_.pop_back();
    return spare;
  }
  return PixelBuffer(pixel_memory());
}

std::pmr::memory_resource* WorkerClient::pixel_memory() const {
  return options_.pixel_memory != nullptr ? options_.pixel_memory : std::pmr::new_delete_resource();
}

// Puts the answer's `samples` images into `batch`: the pixels themselves (the batch's previous
// buffer goes back to `p`, to be reused), or the floats (received in place, or normalised
// from the pixels).
void WorkerClient::deliver(Batch& batch, Pending& p, std::size_t samples) {
  if (image_encoding(*options_.transform) == ImageEncoding::kPixels && options_.deliver_pixels) {
    p.pixels.resize(samples * bytes_per_sample());
    swap(batch.pixels, p.pixels);
    batch.encoding = ImageEncoding::kPixels;
    return;
  }
  batch.images.resize(batch_shape(samples));  // shrinking keeps the received floats
  if (!p.pixels.empty()) {
    options_.transform->normalise(p.pixels.data(), samples, batch.images.data.data());
  }
  batch.encoding = ImageEncoding::kFloat32;
}

bool WorkerClient::request(Batch& batch, BatchRange range) {
  const std::size_t samples = range.size();
  CONFLUX_CHECK(samples <= options_.max_samples,
                "data service: trainer {} asked for a batch of {} samples, its largest is {}",
                options_.trainer, samples, options_.max_samples);
  CONFLUX_CHECK(!finished_, "data service: request after finish()");
  const auto now = Clock::now();
  const std::size_t n = workers_.size();
  int best = -1;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t w = (next_worker_ + k) % n;
    const WorkerState& state = workers_[w];
    if (state.left || state.skip_until > now || state.in_flight >= options_.credits) continue;
    if (best < 0 || expected_finish(state) < expected_finish(workers_[best])) {
      best = static_cast<int>(w);
    }
  }
  if (best < 0) return false;
  next_worker_ = (static_cast<std::size_t>(best) + 1) % n;
  WorkerState& worker = workers_[best];

  Pending p;
  p.worker = best;
  p.sequence = worker.next_sequence++;
  p.epoch = batch.epoch;
  p.step = batch.step;
  p.samples = samples;
  p.deadline = now + std::chrono::duration_cast<Clock::duration>(options_.timeout);
  p.meta.resize(meta_bytes(options_.max_samples));
  const bool pixels = image_encoding(*options_.transform) == ImageEncoding::kPixels;
  if (!pixels || !options_.deliver_pixels) batch.images.resize(batch_shape(options_.max_samples));
  const MPI_Comm comm = options_.comm->get();
  const std::size_t bps = bytes_per_sample();
  const std::size_t chunks = chunk_count(samples, bps);
  p.requests.assign(chunks + 1, MPI_REQUEST_NULL);
  p.statuses.resize(chunks + 1);
  CONFLUX_MPI_CHECK(MPI_Irecv(p.meta.data(), static_cast<int>(p.meta.size()), MPI_BYTE, worker.rank,
                              meta_tag(p.sequence), comm, &p.requests[0]));
  // Floats go straight into their place in the tensor, pixels into the staging buffer that
  // poll() normalises from.
  std::byte* images = reinterpret_cast<std::byte*>(batch.images.data.data());
  if (pixels) {
    p.pixels = pixel_buffer();
    p.pixels.resize(samples * bps);
    images = reinterpret_cast<std::byte*>(p.pixels.data());
  }
  // One receive per chunk; chunks on one tag arrive in the order they were sent.
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t first = c * chunk_samples(bps) * bps;
    const std::size_t count = std::min(chunk_samples(bps) * bps, samples * bps - first);
    CONFLUX_MPI_CHECK(MPI_Irecv(images + first, static_cast<int>(count), MPI_BYTE, worker.rank,
                                image_tag(p.sequence), comm, &p.requests[c + 1]));
  }
  // The request names the batch's plan positions: the worker needs no knowledge of how steps
  // are divided among the trainers (data::BatchSplit stays the one place that decides it).
  send(best, Request{RequestKind::kBatch, options_.trainer, batch.epoch,
                     static_cast<std::uint32_t>(samples), batch.step, p.sequence, range.begin});
  ++worker.in_flight;
  ++stats_.requests;
  pending_.emplace(&batch, std::move(p));
  return true;
}

bool WorkerClient::test(Pending& p) {
  int done = 0;
  CONFLUX_MPI_CHECK(MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &done,
                                p.statuses.data()));
  return done != 0;
}

WorkerClient::Arrival WorkerClient::poll(Batch& batch) {
  auto it = pending_.find(&batch);
  CONFLUX_CHECK(it != pending_.end(), "data service: no request in flight for batch {}/{}",
                batch.epoch, batch.step);
  Pending& p = it->second;
  if (!test(p)) {
    if (Clock::now() < p.deadline) return Arrival::kPending;
    on_timeout(batch, std::move(p));
    pending_.erase(it);
    return Arrival::kTimedOut;
  }
  WorkerState& worker = workers_[p.worker];
  --worker.in_flight;
  int meta_count = 0;
  MPI_Get_count(&p.statuses[0], MPI_BYTE, &meta_count);
  std::size_t image_bytes = 0;
  for (std::size_t c = 1; c < p.statuses.size(); ++c) {
    int count = 0;
    MPI_Get_count(&p.statuses[c], MPI_BYTE, &count);
    image_bytes += static_cast<std::size_t>(count);
  }
  const MetaView meta =
      decode_meta({p.meta.data(), static_cast<std::size_t>(meta_count)}, worker.rank);
  const ReplyHeader& h = meta.header;
  if (h.status == ReplyStatus::kLeaving && h.sequence == p.sequence) {
    on_leaving(worker);
    ++stats_.refused;
    pending_.erase(it);  // every receive completed (empty): nothing to keep
    return Arrival::kTimedOut;
  }
  const std::size_t values = options_.transform->output_shape().size();
  const ImageEncoding encoding = image_encoding(*options_.transform);
  CONFLUX_CHECK(h.status == ReplyStatus::kBatch && h.sequence == p.sequence && h.epoch == p.epoch &&
                    h.step == p.step && h.trainer == options_.trainer &&
                    h.values_per_sample == values && h.encoding == encoding &&
                    h.samples == p.samples && image_bytes == h.samples * bytes_per_sample(),
                "data service: worker rank {} answered request {} (epoch {}, step {}) with "
                "status {}, request {}, epoch {}, step {}, trainer {}, {} samples of {} values "
                "in encoding {} (expected {}) and {} image bytes",
                worker.rank, p.sequence, p.epoch, p.step, static_cast<int>(h.status), h.sequence,
                h.epoch, h.step, h.trainer, h.samples, h.values_per_sample,
                static_cast<int>(h.encoding), static_cast<int>(encoding), image_bytes);
  deliver(batch, p, h.samples);
  batch.labels.assign(meta.labels.begin(), meta.labels.end());
  batch.samples.assign(meta.indices.begin(), meta.indices.end());
  batch.origin = BatchOrigin::kWorker;
  batch.worker = p.worker;
  ++worker.seen.answers;
  worker.seen.last_build_seconds = h.build_seconds;
  worker.seen.total_build_seconds += h.build_seconds;
  worker.seen.last_busy_fraction = h.busy_fraction;
  worker.seen.last_queued = h.queued;
  ++stats_.answered;
  stats_.payload_bytes += image_bytes + h.samples * sizeof(model::Label);
  if (p.pixels.capacity() > 0 && p.pixels.memory() == pixel_memory()) {
    spare_pixels_.push_back(std::move(p.pixels));
  }
  pending_.erase(it);
  return Arrival::kArrived;
}

// When a new request to `w` would be answered, in units of its service time: requests go to
// the worker that answers soonest, so a slower worker gets fewer of them. Workers that have not
// answered yet count as taking one time unit, like the others (ties go round-robin).
double WorkerClient::expected_finish(const WorkerState& w) {
  const double service = w.seen.last_build_seconds > 0 ? w.seen.last_build_seconds : 0;
  return (w.in_flight + 1) * (service > 0 ? service : 1e-9);
}

std::vector<offload::WorkerCounters> WorkerClient::worker_counters() const {
  std::vector<offload::WorkerCounters> out;
  out.reserve(workers_.size());
  const auto now = Clock::now();
  for (const WorkerState& w : workers_) {
    offload::WorkerCounters c = w.seen;
    c.live = !w.left && now >= w.skip_until;
    c.in_flight = static_cast<std::uint32_t>(w.in_flight);
    out.push_back(c);
  }
  return out;
}

void WorkerClient::on_timeout(Batch& batch, Pending&& p) {
  WorkerState& worker = workers_[p.worker];
  ++worker.seen.timeouts;
  worker.skip_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(options_.backoff);
  ++stats_.timeouts;
  if (options_.log != nullptr) {
    options_.log->warn(
        "data service: worker {} (rank {}) did not answer the request for epoch {} step {} "
        "within {:.3g} s; trainer {} builds that batch itself and sends that worker nothing for "
        "{:.3g} s",
        p.worker, worker.rank, p.epoch, p.step, options_.timeout.count(), options_.trainer,
        options_.backoff.count());
  }
  orphan(batch, std::move(p));
}

void WorkerClient::on_leaving(WorkerState& worker) {
  if (worker.left) return;
  worker.left = true;
  if (options_.log != nullptr) {
    options_.log->warn(
        "data service: worker rank {} left the service (a stop signal reached it); trainer {} "
        "builds the batches it would have built",
        worker.rank, options_.trainer);
  }
}

void WorkerClient::orphan(Batch& batch, Pending&& p) {
  // The posted receive still targets these buffers: they leave with the orphan.
  ++workers_[p.worker].given_up;
  orphans_.push_back(Orphan{std::move(p), std::move(batch.images)});
  batch.images = model::Tensor{};
  stats_.peak_orphans = std::max(stats_.peak_orphans, orphans_.size());
}

void WorkerClient::abandon(Batch& batch) {
  auto it = pending_.find(&batch);
  if (it == pending_.end()) return;
  orphan(batch, std::move(it->second));
  pending_.erase(it);
}

void WorkerClient::settle_orphan(Orphan& orphan) {
  WorkerState& worker = workers_[orphan.pending.worker];
  --worker.in_flight;
  --worker.given_up;
  int meta_count = 0;
  MPI_Get_count(&orphan.pending.statuses[0], MPI_BYTE, &meta_count);
  const MetaView meta =
      decode_meta({orphan.pending.meta.data(), static_cast<std::size_t>(meta_count)}, worker.rank);
  if (meta.header.status == ReplyStatus::kCancelled) {
    ++stats_.cancelled;
  } else if (meta.header.status == ReplyStatus::kLeaving) {
    on_leaving(worker);
    ++stats_.refused;
  } else {
    ++stats_.late_dropped;
  }
}

void WorkerClient::progress() {
  while (!outgoing_.empty()) {
    int done = 0;
    CONFLUX_MPI_CHECK(MPI_Test(&outgoing_.front().request, &done, MPI_STATUS_IGNORE));
    if (!done) break;
    outgoing_.pop_front();
  }
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    if (test(it->pending)) {
      settle_orphan(*it);
      it = orphans_.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkerClient::post_done_receives() {
  if (options_.trainer != 0) return;
  done_from_.assign(workers_.size(), -1);
  done_receives_.assign(workers_.size(), MPI_REQUEST_NULL);
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    CONFLUX_MPI_CHECK(MPI_Irecv(&done_from_[w], 1, MPI_INT32_T, workers_[w].rank, kDoneTag,
                                options_.comm->get(), &done_receives_[w]));
  }
}

// Whether nothing is due any more: late answers, sends, and (trainer 0) done messages.
bool WorkerClient::settled() {
  progress();
  for (auto& r : done_receives_) {
    int done = 0;
    if (r != MPI_REQUEST_NULL) CONFLUX_MPI_CHECK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
  }
  return orphans_.empty() && outgoing_.empty() &&
         std::all_of(done_receives_.begin(), done_receives_.end(),
                     [](MPI_Request r) { return r == MPI_REQUEST_NULL; });
}

// The workers that still owe an answer or (trainer 0) their done message after the grace: they
// stopped answering (frozen, or their node is gone). The run's results do not depend on them.
void WorkerClient::report_lost() {
  std::vector<int> lost;
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    const bool owes_answer = std::any_of(orphans_.begin(), orphans_.end(), [&](const Orphan& o) {
      return o.pending.worker == static_cast<int>(w);
    });
    const bool owes_done = !done_receives_.empty() && done_receives_[w] != MPI_REQUEST_NULL;
    if (owes_answer || owes_done) lost.push_back(workers_[w].rank);
  }
  stats_.lost_workers = lost.size();
  if (options_.log != nullptr) {
    options_.log->warn(
        "data service: worker rank(s) {} did not finish within {:.3g} s of trainer {}'s goodbye "
        "({} late answer(s), {} send(s) outstanding); the run's results do not depend on them, "
        "so the job ends without waiting for them",
        fmt::join(lost, ", "), options_.shutdown_grace.count(), options_.trainer, orphans_.size(),
        outgoing_.size());
  }
}

void WorkerClient::finish() {
  if (finished_) return;
  finished_ = true;
  CONFLUX_CHECK(pending_.empty(), "data service: finish() with {} batch request(s) unused",
                pending_.size());
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    send(static_cast<int>(w),
         Request{RequestKind::kGoodbye, options_.trainer, 0, 0, 0, workers_[w].next_sequence});
  }
  post_done_receives();
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(options_.shutdown_grace);
  Backoff backoff(std::chrono::microseconds(20), std::chrono::microseconds(1000));
  while (!settled()) {
    if (Clock::now() > deadline) {
      report_lost();
      return;
    }
    backoff.pause();
  }
}

}  // namespace conflux::data
