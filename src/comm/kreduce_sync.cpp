#include "conflux/comm/kreduce_sync.hpp"

#include <algorithm>
#include <climits>
#include <thread>

namespace conflux::comm {

namespace {

// Tags on K-Reduce's own communicator: a trainer's contribution to an aggregator, and an
// aggregator's merged chunk. Between two aggregators both flow in each direction in the same
// step, so they need different tags; MPI's non-overtaking order keeps the steps apart.
constexpr int kContributionTag = 1;
constexpr int kMergedTag = 2;

// How long the destructor (an error path) lets transfers in flight finish.
constexpr auto kCleanupWait = std::chrono::seconds(2);

bool any_active(std::span<const MPI_Request> requests) {
  return std::any_of(requests.begin(), requests.end(),
                     [](MPI_Request r) { return r != MPI_REQUEST_NULL; });
}

// Completes whatever finished (MPI_Testsome frees completed requests); progresses MPI.
void test_some(std::vector<MPI_Request>& requests, std::vector<int>& indices) {
  if (!any_active(requests)) return;
  indices.resize(requests.size());
  int done = 0;
  CONFLUX_MPI_CHECK(MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &done,
                                 indices.data(), MPI_STATUSES_IGNORE));
}

}  // namespace

GradientChunk kreduce_chunk(std::size_t total, int parts, int index) noexcept {
  const auto p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
  const std::size_t base = total / p, extra = total % p;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

KReduceSync::KReduceSync(const Communicator& trainers, std::size_t gradient_size,
                         KReduceOptions options)
    : trainers_(trainers),
      size_(trainers.size()),
      rank_(trainers.rank()),
      aggregators_(options.aggregators == 0 ? trainers.size() : options.aggregators),
      stale_(options.stale_nonaggregators),
      timeout_(options.timeout),
      gradient_size_(gradient_size) {
  CONFLUX_CHECK(aggregators_ >= 1 && aggregators_ <= size_,
                "k-reduce: {} aggregators among {} trainers", options.aggregators, size_);
  for (int k = 0; k < aggregators_; ++k) {
    chunks_.push_back(kreduce_chunk(gradient_size, aggregators_, k));
  }
  CONFLUX_CHECK(chunks_.front().size <= static_cast<std::size_t>(INT_MAX),
                "k-reduce: chunks of {} elements exceed MPI's count limit", chunks_.front().size);
  for (int t = 0; t < size_; ++t) {
    contribution_what_.push_back(
        fmt::format("k-reduce: trainer {}'s contribution to gradient chunk {}", t, rank_));
  }
  for (int k = 0; k < aggregators_; ++k) {
    merged_what_.push_back(
        fmt::format("k-reduce: merged gradient chunk {} from aggregator {}", k, k));
  }
  send_what_ = fmt::format("k-reduce: trainer {}'s sends to the other trainers", rank_);
}

KReduceSync::~KReduceSync() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || !comm_) return;
  std::vector<std::vector<MPI_Request>*> all = {&outgoing_requests_, &incoming_requests_,
                                                &merged_sends_[0],   &merged_sends_[1],
                                                &merged_receives_,   &owed_receives_};
  // Receives nobody will answer are cancelled; sends get a moment to finish.
  for (auto* requests : {&incoming_requests_, &merged_receives_, &owed_receives_}) {
    for (MPI_Request& r : *requests) {
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    }
  }
  const auto until = Clock::now() + kCleanupWait;
  bool active = true;
  while (active && Clock::now() < until) {
    active = false;
    for (auto* requests : all) {
      int done = 0;
      MPI_Testall(static_cast<int>(requests->size()), requests->data(), &done, MPI_STATUSES_IGNORE);
      active |= done == 0;
    }
    if (active) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!active) return;
  // A peer is gone (this is an error path): MPI may still touch the buffers of the requests
  // let go here, so they are deliberately leaked rather than freed under it.
  for (auto* requests : all) {
    for (MPI_Request& r : *requests) {
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
  }
  for (auto* buffer : {&outgoing_, &incoming_, &merged_[0], &merged_[1], &owed_}) {
    static_cast<void>(new std::vector<float>(std::move(*buffer)));
  }
}

std::string KReduceSync::name() const {
  return fmt::format("k-reduce (K={} of {}{})", aggregators_, size_,
                     stale_ && aggregators_ < size_ ? ", stale non-aggregators" : "");
}

void KReduceSync::connect() {
  if (comm_) return;
  comm_.emplace(trainers_.split(0, rank_));
  outgoing_.resize(gradient_size_);
  outgoing_requests_.assign(static_cast<std::size_t>(aggregators_), MPI_REQUEST_NULL);
  merged_receives_.assign(static_cast<std::size_t>(aggregators_), MPI_REQUEST_NULL);
  if (is_aggregator()) {
    const std::size_t chunk = chunks_[static_cast<std::size_t>(rank_)].size;
    incoming_.resize(chunk * static_cast<std::size_t>(size_));
    incoming_requests_.assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
    for (int i = 0; i < 2; ++i) {
      merged_[i].resize(chunk);
      merged_sends_[i].assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
    }
  }
  if (stale()) {
    owed_.resize(gradient_size_);
    owed_receives_.assign(static_cast<std::size_t>(aggregators_), MPI_REQUEST_NULL);
  }
}

void KReduceSync::wait(std::span<MPI_Request> requests, Clock::time_point deadline,
                       const std::string& what) {
  for (MPI_Request& r : requests) {
    if (r == MPI_REQUEST_NULL) continue;
    const auto left = std::max(Clock::duration::zero(), deadline - Clock::now());
    wait_for(r, std::chrono::duration<double>(left), what);
  }
}

void KReduceSync::sum(std::span<float> gradients) {
  CONFLUX_CHECK(!owed_pending_,
                "k-reduce: sum() while a stale merged gradient is owed (drain() first)");
  exchange_impl(gradients, false);
}

Merged KReduceSync::exchange(std::span<float> gradients) {
  return exchange_impl(gradients, stale());
}

Merged KReduceSync::exchange_impl(std::span<float> gradients, bool late) {
  CONFLUX_CHECK(gradients.size() == gradient_size_,
                "k-reduce: exchange of {} gradient elements, set up for {}", gradients.size(),
                gradient_size_);
  if (size_ == 1) return Merged::kCurrent;
  connect();
  const MPI_Comm comm = comm_->get();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_);
  // The previous contribution is on its way (it left a step ago): its buffer is needed again.
  wait(outgoing_requests_, deadline, send_what_);
  std::copy(gradients.begin(), gradients.end(), outgoing_.begin());
  // Posted before anyone's contribution can arrive at them: no unexpected-message copies.
  if (is_aggregator()) post_contribution_receives(comm);
  // The merged chunks land straight in the caller's buffer (copied out above).
  if (!late) post_merged_receives(gradients, comm, merged_receives_);
  send_contributions(comm);
  if (is_aggregator()) reduce_own_chunk(gradients, deadline);
  if (!late) {
    wait_merged(merged_receives_, deadline);
    return Merged::kCurrent;
  }
  // A stale non-aggregator: apply the previous step's merged gradient (long arrived, as a rule)
  // and leave this step's to arrive while it computes the next one.
  const Merged result = take_owed(gradients, deadline);
  post_merged_receives(owed_, comm, owed_receives_);
  owed_pending_ = true;
  return result;
}

void KReduceSync::post_contribution_receives(MPI_Comm comm) {
  const std::size_t chunk = chunks_[static_cast<std::size_t>(rank_)].size;
  for (int t = 0; t < size_; ++t) {
    if (t == rank_ || chunk == 0) continue;
    CONFLUX_MPI_CHECK(MPI_Irecv(incoming_.data() + static_cast<std::size_t>(t) * chunk,
                                static_cast<int>(chunk), MPI_FLOAT, t, kContributionTag, comm,
                                &incoming_requests_[static_cast<std::size_t>(t)]));
  }
}

// The merged chunk of every other aggregator into `into` (an aggregator merges its own in
// place; a stale trainer is never an aggregator).
void KReduceSync::post_merged_receives(std::span<float> into, MPI_Comm comm,
                                       std::vector<MPI_Request>& reqs) {
  for (int k = 0; k < aggregators_; ++k) {
    const GradientChunk& c = chunks_[static_cast<std::size_t>(k)];
    if (k == rank_ || c.size == 0) continue;
    CONFLUX_MPI_CHECK(MPI_Irecv(into.data() + c.offset, static_cast<int>(c.size), MPI_FLOAT, k,
                                kMergedTag, comm, &reqs[static_cast<std::size_t>(k)]));
  }
}

void KReduceSync::send_contributions(MPI_Comm comm) {
  for (int k = 0; k < aggregators_; ++k) {
    const GradientChunk& c = chunks_[static_cast<std::size_t>(k)];
    if (k == rank_ || c.size == 0) continue;
    CONFLUX_MPI_CHECK(MPI_Isend(outgoing_.data() + c.offset, static_cast<int>(c.size), MPI_FLOAT, k,
                                kContributionTag, comm,
                                &outgoing_requests_[static_cast<std::size_t>(k)]));
  }
}

void KReduceSync::wait_merged(std::vector<MPI_Request>& reqs, Clock::time_point deadline) {
  for (int k = 0; k < aggregators_; ++k) {
    wait(std::span(reqs).subspan(static_cast<std::size_t>(k), 1), deadline,
         merged_what_[static_cast<std::size_t>(k)]);
  }
}

// The previous step's merged gradient, when one is owed.
Merged KReduceSync::take_owed(std::span<float> gradients, Clock::time_point deadline) {
  if (!owed_pending_) return Merged::kNone;
  wait_merged(owed_receives_, deadline);
  std::copy(owed_.begin(), owed_.end(), gradients.begin());
  return Merged::kPrevious;
}

void KReduceSync::reduce_own_chunk(std::span<float> gradients, Clock::time_point deadline) {
  const auto me = static_cast<std::size_t>(rank_);
  const GradientChunk& c = chunks_[me];
  std::vector<float>& merged = merged_[static_cast<std::size_t>(turn_)];
  std::vector<MPI_Request>& sends = merged_sends_[static_cast<std::size_t>(turn_)];
  turn_ ^= 1;
  // This buffer's sends left two steps ago.
  wait(sends, deadline, send_what_);
  // Trainer order 0..W-1, each contribution as soon as it is in: the sum is the same bits
  // whatever order the messages arrive in.
  float* acc = merged.data();
  for (int t = 0; t < size_; ++t) {
    const auto ti = static_cast<std::size_t>(t);
    const float* in = outgoing_.data() + c.offset;
    if (t != rank_) {
      wait(std::span(incoming_requests_).subspan(ti, 1), deadline, contribution_what_[ti]);
      in = incoming_.data() + ti * c.size;
    }
    if (t == 0) {
      std::copy(in, in + c.size, acc);
    } else {
      for (std::size_t i = 0; i < c.size; ++i) acc[i] += in[i];
    }
  }
  const MPI_Comm comm = comm_->get();
  for (int t = 0; t < size_ && c.size > 0; ++t) {
    if (t == rank_) continue;
    CONFLUX_MPI_CHECK(MPI_Isend(acc, static_cast<int>(c.size), MPI_FLOAT, t, kMergedTag, comm,
                                &sends[static_cast<std::size_t>(t)]));
  }
  std::copy(acc, acc + c.size, gradients.begin() + static_cast<std::ptrdiff_t>(c.offset));
}

bool KReduceSync::drain(std::span<float> gradients) {
  if (!comm_) return false;  // nothing was ever exchanged
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_);
  bool owed = false;
  if (owed_pending_) {
    CONFLUX_CHECK(gradients.size() == gradient_size_,
                  "k-reduce: drain into {} gradient elements, set up for {}", gradients.size(),
                  gradient_size_);
    for (int k = 0; k < aggregators_; ++k) {
      wait(std::span(owed_receives_).subspan(static_cast<std::size_t>(k), 1), deadline,
           merged_what_[static_cast<std::size_t>(k)]);
    }
    std::copy(owed_.begin(), owed_.end(), gradients.begin());
    owed_pending_ = false;
    owed = true;
  }
  wait(outgoing_requests_, deadline, send_what_);
  for (auto& sends : merged_sends_) wait(sends, deadline, send_what_);
  return owed;
}

void KReduceSync::progress() {
  if (!comm_) return;
  test_some(outgoing_requests_, completed_);
  test_some(owed_receives_, completed_);
  for (auto& sends : merged_sends_) test_some(sends, completed_);
}

}  // namespace conflux::comm
