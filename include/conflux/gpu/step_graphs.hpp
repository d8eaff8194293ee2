#pragma once
/// @file step_graphs.hpp
/// Training steps replayed as captured graphs (CUDA graphs on a GPU): a step of a static shape
/// is run eagerly until one run of it allocates nothing, then captured once and replayed, one
/// launch instead of the several hundred of a ResNet's step. What changes from step to step is
/// read from device memory written before the replay (DeviceModel::set_step(), the staged
/// batch), so a replay computes what an eager step would. Executor-generic: the CUDA executor
/// captures stream work, the tests' recording executor records the element functions.
///
/// A graph holds the addresses of the buffers it was captured with. Any allocation or free of
/// device memory since then (Ex::memory_changes(), e.g. an evaluation pass that grew the
/// activations) may have freed one, so every graph is dropped and the step runs eagerly again
/// (and is captured anew once steady). A capture that fails (a library call that cannot be
/// captured) turns graphs off for the run, with the reason in failure(), and the step runs
/// eagerly: slower, never wrong. A capture that allocated device memory is retried once the
/// key is steady again (a few times), since the allocation may be a buffer that just grew.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"

namespace conflux::gpu {

/// What makes two training steps the same graph: their device buffers and scalar arguments.
struct StepKey {
  const void* input = nullptr;    ///< images or pixels
  const void* labels = nullptr;   ///< labels
  const void* samples = nullptr;  ///< sample indices (dropout), or null
  int n = 0;                      ///< samples in the batch
  float grad_scale = 0.0f;        ///< dL/dlogits scale
  std::uint64_t seed = 0;         ///< run.seed (dropout masks)
  bool operator==(const StepKey&) const = default;
};

template <class Ex>
class StepGraphs {
 public:
  /// How many graphs are kept (the two staging slots, each with a full and a last batch).
  static constexpr std::size_t kMaxGraphs = 8;
  /// Captures that allocated memory retried before graphs are turned off.
  static constexpr int kMaxMemoryRetries = 4;

  /// Graphs on `ex` (which must outlive this object).
  explicit StepGraphs(Ex& ex) : ex_(&ex) {}

  /// Runs `step` (device work only, the same for the same key) for `key`: replays its graph,
  /// or runs it eagerly and captures it once a run of it allocated nothing.
  template <class Step>
  void run(const StepKey& key, Step&& step) {
    if (ex_->memory_changes() != captured_changes_) drop_graphs();
    Entry& e = entry(key);
    if (e.graph) {
      ex_->launch(*e.graph);
      ++replays_;
      return;
    }
    if (e.steady && failure_.empty() && capture(e, step)) return;
    const std::uint64_t before = ex_->memory_changes();
    step();
    e.steady = ex_->memory_changes() == before;
  }

  /// Graphs captured so far (recaptures included).
  std::size_t captures() const noexcept { return captures_; }
  /// Steps run as a replay.
  std::size_t replays() const noexcept { return replays_; }
  /// Why capturing failed (graphs are then off); empty when it has not.
  const std::string& failure() const noexcept { return failure_; }

 private:
  struct Entry {
    StepKey key;
    bool steady = false;  // its last eager run allocated nothing
    std::optional<typename Ex::Graph> graph;
  };

  Entry& entry(const StepKey& key) {
    for (Entry& e : entries_) {
      if (e.key == key) return e;
    }
    if (entries_.size() == kMaxGraphs) entries_.erase(entries_.begin());
    entries_.push_back(Entry{.key = key, .steady = false, .graph = std::nullopt});
    return entries_.back();
  }

  // Captures `step` into e's graph and launches it; false (graphs off, nothing run) when the
  // capture failed.
  template <class Step>
  bool capture(Entry& e, Step& step) {
    const std::uint64_t before = ex_->memory_changes();
    try {
      ex_->begin_capture();
      try {
        step();
      } catch (...) {
        ex_->abort_capture();
        throw;
      }
      e.graph = ex_->end_capture();
      // A buffer allocated or freed while capturing is not in the graph as it will be used.
      CONFLUX_CHECK(ex_->memory_changes() == before,
                    "device memory was allocated or freed while capturing a training step");
    } catch (const std::exception& error) {
      // An allocation while capturing (a buffer grown after all) only means the key was not
      // steady yet: it runs eagerly and is captured again, a few times at most.
      if (ex_->memory_changes() != before && ++memory_retries_ <= kMaxMemoryRetries) {
        drop_graphs();
        return false;
      }
      failure_ = error.what();
      drop_graphs();
      return false;
    }
    ++captures_;
    captured_changes_ = ex_->memory_changes();  // instantiating may allocate
    ex_->launch(*e.graph);
    ++replays_;
    return true;
  }

  // Every key proves itself steady again: the change may have been a buffer it needs growing.
  void drop_graphs() {
    for (Entry& e : entries_) {
      e.graph.reset();
      e.steady = false;
    }
    captured_changes_ = ex_->memory_changes();
  }

  Ex* ex_;
  std::vector<Entry> entries_;
  std::uint64_t captured_changes_ = 0;  // memory_changes() when the graphs were valid
  std::size_t captures_ = 0;
  std::size_t replays_ = 0;
  std::string failure_;
  int memory_retries_ = 0;
};

}  // namespace conflux::gpu
