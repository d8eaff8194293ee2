#include "conflux/ckpt/async_writer.hpp"

#include "conflux/core/elapsed.hpp"

namespace conflux::ckpt {

AsyncCheckpointWriter::AsyncCheckpointWriter(CheckpointStore store, std::filesystem::path previous)
    : store_(std::move(store)), last_published_(std::move(previous)), thread_([this] { run(); }) {}

AsyncCheckpointWriter::~AsyncCheckpointWriter() {
  {
    std::unique_lock lock(mutex_);
    wait_idle(lock);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void AsyncCheckpointWriter::wait_idle(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [&] { return !busy_ && !pending_; });
}

TrainingState AsyncCheckpointWriter::take_buffer() {
  const auto start = SteadyClock::now();
  std::unique_lock lock(mutex_);
  wait_idle(lock);
  stats_.wait_seconds += seconds_since(start);
  return std::move(spare_);
}

void AsyncCheckpointWriter::submit(TrainingState state) {
  const auto start = SteadyClock::now();
  {
    std::unique_lock lock(mutex_);
    wait_idle(lock);
    stats_.wait_seconds += seconds_since(start);
    pending_ = std::move(state);
  }
  changed_.notify_all();
}

void AsyncCheckpointWriter::flush() {
  std::unique_lock lock(mutex_);
  wait_idle(lock);
  CONFLUX_CHECK(error_.empty(), "{}", error_);
}

bool AsyncCheckpointWriter::failed() const {
  std::lock_guard lock(mutex_);
  return !error_.empty();
}

std::string AsyncCheckpointWriter::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

std::filesystem::path AsyncCheckpointWriter::last_published() const {
  std::lock_guard lock(mutex_);
  return last_published_;
}

PersistStats AsyncCheckpointWriter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void AsyncCheckpointWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || pending_; });
    if (!pending_) return;  // stopping with nothing left to write
    TrainingState state = std::move(*pending_);
    pending_.reset();
    busy_ = true;
    const bool skip = !error_.empty();  // after a failure, nothing newer may become `latest`
    lock.unlock();
    std::string failure;
    WriteStats written;
    if (!skip) {
      try {
        written = store_.publish(state);
      } catch (const std::exception& e) {
        failure = fmt::format("checkpoint at step {} could not be written: {}", state.global_step,
                              e.what());
      }
    }
    lock.lock();
    if (!skip && failure.empty()) {
      ++stats_.written;
      stats_.bytes += written.bytes;
      stats_.write_seconds += written.seconds;
      stats_.max_write_seconds = std::max(stats_.max_write_seconds, written.seconds);
      last_published_ = store_.path_for(state.global_step);
    }
    if (!failure.empty()) {
      error_ = last_published_.empty() ? failure + " (there is no earlier checkpoint)"
                                       : fmt::format("{}; the previous checkpoint {} is intact",
                                                     failure, last_published_.string());
    }
    spare_ = std::move(state);
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace conflux::ckpt
