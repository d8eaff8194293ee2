#include "conflux/data/pipeline/sample_fetcher.hpp"

#include <algorithm>

#include "conflux/core/error.hpp"

namespace conflux::data {

SampleFetcher::SampleFetcher(const SampleSource& source, std::size_t budget_bytes)
    : source_(source), budget_(budget_bytes), thread_([this] { run(); }) {
  stats_.budget_bytes = budget_bytes;
}

SampleFetcher::~SampleFetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::uint64_t SampleFetcher::enqueue(std::span<const std::uint32_t> samples) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_ticket_++;
    Ticket& t = tickets_[id];
    t.samples.assign(samples.begin(), samples.end());
    t.bytes.resize(samples.size());
  }
  wake_.notify_one();
  return id;
}

// The oldest ticket with samples left to read, when the budget allows another read (always
// when nothing is held, so that one sample larger than the budget still flows).
SampleFetcher::Ticket* SampleFetcher::next_to_read() {
  if (held_ > 0 && held_ >= budget_) return nullptr;
  for (auto& [id, t] : tickets_) {
    if (!t.claimed && !t.failed && t.next < t.samples.size()) return &t;
  }
  return nullptr;
}

void SampleFetcher::run() {
  std::vector<std::uint8_t> buffer;
  std::unique_lock lock(mutex_);
  for (;;) {
    Ticket* t = nullptr;
    wake_.wait(lock, [&] { return stop_ || (t = next_to_read()) != nullptr; });
    if (stop_) return;
    t->in_flight = true;
    const std::uint32_t sample = t->samples[t->next];
    lock.unlock();
    // A read error is not the I/O thread's to report: the sample stays unread and the builder
    // reads it again itself, which raises the error where the batch is built.
    bool ok = true;
    try {
      source_.read(sample, buffer);
    } catch (const Error&) {
      ok = false;
    }
    lock.lock();
    t->in_flight = false;
    // Stored even when the ticket was claimed meanwhile: its taker waits for this read and
    // takes it, so no sample is read twice.
    if (ok) {
      held_ += buffer.size();
      t->held += buffer.size();
      stats_.bytes_read += buffer.size();
      ++stats_.samples_read_ahead;
      stats_.peak_bytes_held = std::max<std::uint64_t>(stats_.peak_bytes_held, held_);
      t->bytes[t->next++] = std::move(buffer);
      buffer = {};
    } else if (!ok) {
      t->failed = true;  // the taker reads from `next` on and meets the error itself
    }
    read_done_.notify_all();
  }
}

// Marks a ticket claimed, waits for a read in flight, and moves out what was read.
SampleBytes SampleFetcher::claim(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  const auto it = tickets_.find(ticket);
  CONFLUX_CHECK(it != tickets_.end(), "sample fetcher: unknown ticket {}", ticket);
  Ticket& t = it->second;
  t.claimed = true;
  read_done_.wait(lock, [&] { return !t.in_flight; });
  held_ -= t.held;
  SampleBytes bytes = std::move(t.bytes);
  const std::size_t read = t.next;
  // Samples past `read` are empty vectors: the caller reads them.
  for (std::size_t i = read; i < bytes.size(); ++i) bytes[i].clear();
  std::vector<std::uint32_t> samples = std::move(t.samples);
  tickets_.erase(it);
  lock.unlock();
  wake_.notify_one();  // the budget may allow more reads now
  // Read the rest here, outside the lock.
  std::uint64_t late = 0, late_bytes = 0;
  for (std::size_t i = read; i < samples.size(); ++i) {
    source_.read(samples[i], bytes[i]);
    ++late;
    late_bytes += bytes[i].size();
  }
  if (late > 0) {
    std::lock_guard relock(mutex_);
    stats_.samples_read_late += late;
    stats_.bytes_read += late_bytes;
  }
  return bytes;
}

SampleBytes SampleFetcher::take(std::uint64_t ticket) {
  return claim(ticket);
}

void SampleFetcher::drop(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  const auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return;
  Ticket& t = it->second;
  t.claimed = true;
  read_done_.wait(lock, [&] { return !t.in_flight; });
  held_ -= t.held;
  tickets_.erase(it);
  lock.unlock();
  wake_.notify_one();
}

FetcherStats SampleFetcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace conflux::data
