#pragma once
/// @file batch_server.hpp
/// A worker rank of the data service: receives batch requests from trainers, builds each batch
/// from the epoch plan's order at the plan positions the request names (so it needs no
/// knowledge of how a step is divided among the trainers) and the transforms (bit-identical to
/// the trainer's own build), and
/// sends it back without blocking. Queued requests are served round-robin over trainers; the
/// number of batches held while sending is bounded. Idle, it sleeps between polls instead of
/// spinning. It returns once every trainer has said goodbye and every answer is delivered.

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/core/busy_meter.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/data/pipeline/epoch_plan.hpp"
#include "conflux/data/pipeline/sample_fetcher.hpp"
#include "conflux/data/service/service_protocol.hpp"
#include "conflux/telemetry/timeline.hpp"

namespace conflux::data {

/// Fault injection for tests: how one worker misbehaves.
struct WorkerFault {
  enum class Mode { kNone, kDelay, kStop, kSlow };
  Mode mode = Mode::kNone;
  std::chrono::duration<double> delay{0};  ///< kDelay: each answer waits this long
  double factor = 2;                       ///< kSlow: each build takes this many times longer
  std::uint64_t after = 0;                 ///< answers given normally first
};

/// Settings of a BatchServer.
struct BatchServerOptions {
  const comm::Communicator* comm = nullptr;  ///< the data service's communicator
  std::vector<int> trainer_ranks;            ///< rank in *comm of each trainer
  int worker = 0;                            ///< this worker's index
  const SampleSource* source = nullptr;      ///< training split
  const SampleTransform* transform = nullptr;
  SampleDecoding decoding;                           ///< channels, on_corrupt
  std::size_t cache_bytes = 64 << 20;                ///< read-ahead bound (data.cache_mb)
  int threads = 1;                                   ///< preprocessing threads
  std::uint64_t seed = 0;                            ///< run.seed
  std::size_t global_batch = 0;                      ///< train.batch_size
  int send_buffers = 2;                              ///< batches held while sending
  std::chrono::duration<double> drain_timeout{600};  ///< longest wait for a send at the end
  WorkerFault fault;
  /// The stop signal this process received, or 0 (null: none watched). On one the worker leaves
  /// the service: it answers every request with kLeaving until the trainers say goodbye.
  std::function<int()> stop_signal;
  const Logger* log = nullptr;
  telemetry::Timeline* timeline = nullptr;  ///< records each batch built; null: none
};

/// What a worker did.
struct BatchServerStats {
  std::size_t batches = 0;                 ///< batches built and sent
  std::size_t samples = 0;                 ///< samples in them
  std::size_t cancelled = 0;               ///< requests cancelled by a trainer's goodbye
  std::size_t refused = 0;                 ///< requests refused after this worker left
  std::vector<std::size_t> per_trainer;    ///< batches sent to each trainer
  std::uint64_t peak_bytes_in_flight = 0;  ///< most batch bytes held while sending
  double build_seconds = 0;                ///< time spent building (a kSlow fault's wait included)
  double total_seconds = 0;                ///< time in serve()
  double cpu_seconds = 0;                  ///< CPU time this process used in serve()
  std::uint64_t skipped = 0;               ///< samples skipped as corrupt
  FetcherStats fetcher;                    ///< the read-ahead (zero for an in-memory source)
};

/// Serves batch requests until every trainer said goodbye and every answer went out, then
/// tells trainer 0 it is done (kDoneTag).
class BatchServer {
 public:
  explicit BatchServer(BatchServerOptions options);
  /// Runs the serving loop; returns the statistics.
  BatchServerStats serve();

 private:
  using Clock = std::chrono::steady_clock;
  struct SendSlot {
    bool busy = false;
    bool posted = false;
    int trainer = 0;
    Clock::time_point not_before{};  // fault injection: hold the answer until then
    Request request;
    std::vector<std::byte> meta;
    std::vector<std::byte> images;  // in builder_.encoding()
    std::vector<model::Label> labels;
    std::vector<MPI_Request> requests;  // image chunks, then the meta message
  };
  struct Queued {  // a request waiting to be built, its samples being read ahead
    Request request;
    std::optional<std::uint64_t> ticket;
  };
  struct SmallSend {  // cancellation answers
    std::vector<std::byte> meta;
    std::vector<MPI_Request> requests;
  };

  bool receive_requests();
  void handle(const Request& request, int source);
  bool complete_sends();
  bool build_next();
  std::optional<std::size_t> next_queue();
  void build_and_send(SendSlot& slot, std::span<const std::uint32_t> samples,
                      std::span<const std::vector<std::uint8_t>> fetched, bool delayed);
  void slow_down(Clock::time_point build_start);
  void answer(SendSlot& slot, std::span<const std::uint32_t> samples, double build_seconds,
              bool delayed);
  void count_answer(std::size_t trainer, std::size_t samples);
  void post_chunk(SendSlot& slot, std::size_t chunk);
  void post_meta(SendSlot& slot);
  void refuse_queued(int trainer, ReplyStatus why);
  void leave_on_signal();
  void send_done();
  const EpochPlan& plan(std::uint32_t epoch);
  bool faulty_now() const;
  bool done() const;
  std::size_t queued_requests() const;

  BatchServerOptions options_;
  BatchBuilder builder_;
  std::optional<SampleFetcher> fetcher_;    // for a streamed source
  std::vector<std::deque<Queued>> queues_;  // per trainer, in arrival order
  std::vector<bool> said_goodbye_;
  int goodbyes_ = 0;
  std::size_t next_trainer_ = 0;  // round-robin position
  std::vector<SendSlot> slots_;
  std::deque<SmallSend> small_sends_;
  std::map<std::uint32_t, EpochPlan> plans_;
  Request incoming_;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  std::uint64_t answers_ = 0;
  std::int32_t done_message_ = 0;
  bool leaving_ = false;  // a stop signal came: every request is refused
  BusyMeter load_;        // busy fraction reported to the trainers
  BatchServerStats stats_;
};

}  // namespace conflux::data
