#pragma once
/// @file worker_client.hpp
/// The trainer's side of the data service: sends batch requests to worker ranks within a
/// credit limit per worker, receives the answers (floats straight into the batch's tensor, or
/// pixels that it normalises into the tensor or hands over as they are), and gives
/// up on a request whose deadline passed. A request given up on keeps its buffers until the
/// late answer arrives, which is then dropped, so no batch is ever used twice; the worker that
/// missed the deadline gets no requests for a back-off period.

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <memory_resource>
#include <unordered_map>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/pipeline/batch.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "conflux/data/pipeline/epoch_plan.hpp"
#include "conflux/data/service/service_protocol.hpp"
#include "conflux/offload/pipeline_counters.hpp"

namespace conflux::data {

/// Settings of a WorkerClient.
struct WorkerClientOptions {
  const comm::Communicator* comm = nullptr;   ///< the data service's communicator
  std::vector<int> worker_ranks;              ///< rank in *comm of each worker
  int trainer = 0;                            ///< this trainer's index
  int credits = 2;                            ///< most requests in flight per worker
  std::chrono::duration<double> timeout{30};  ///< deadline of one request
  std::chrono::duration<double> backoff{10};  ///< pause for a worker that missed one
  /// Longest wait at the end for late answers and, on trainer 0, the workers' done messages;
  /// a worker that misses it is reported lost (see finish()), not waited for.
  std::chrono::duration<double> shutdown_grace{30};
  /// The training transform: the image shape, the encoding and the normalisation of answers.
  const SampleTransform* transform = nullptr;
  std::size_t max_samples = 0;  ///< largest batch of this trainer
  /// With a transform whose output is pixels: deliver them as they arrived (Batch::pixels, for
  /// a consumer that normalises them itself) instead of normalising them into Batch::images.
  bool deliver_pixels = false;
  /// Where received pixels land (pinned host memory on a GPU trainer); null: the heap.
  std::pmr::memory_resource* pixel_memory = nullptr;
  const Logger* log = nullptr;
};

/// Counters of one trainer's use of the data service.
struct WorkerClientStats {
  std::size_t requests = 0;         ///< batch requests sent
  std::size_t answered = 0;         ///< answers used for training
  std::size_t timeouts = 0;         ///< requests given up on
  std::size_t late_dropped = 0;     ///< late answers received and dropped
  std::size_t cancelled = 0;        ///< requests the worker cancelled at the end
  std::size_t refused = 0;          ///< requests refused by a worker leaving the service
  std::size_t peak_orphans = 0;     ///< most given-up requests holding buffers at once
  std::size_t lost_workers = 0;     ///< workers that did not finish within the shutdown grace
  std::uint64_t payload_bytes = 0;  ///< image + label bytes of used answers
};

/// Requests and receives batches for one trainer.
class WorkerClient {
 public:
  /// Result of polling a request.
  enum class Arrival { kPending, kArrived, kTimedOut };

  explicit WorkerClient(WorkerClientOptions options);
  /// Cancels receives still posted (only on error paths; finish() drains them normally).
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  /// Number of workers.
  int workers() const noexcept { return static_cast<int>(workers_.size()); }
  /// Whether some worker is not in its back-off period and can take a request now or once an
  /// answer still awaited in time arrives.
  bool any_live_worker() const;
  /// Requests batch (batch.epoch, batch.step), which the plan says covers plan positions
  /// `range`, from the live worker with the fewest requests in flight; false when every live
  /// worker is at its credit limit (or none is live).
  bool request(Batch& batch, BatchRange range);
  /// Completes the request of `batch` if its answer arrived (filling images, labels, samples,
  /// origin); on a passed deadline gives it up (the batch gets fresh buffers) and logs a
  /// warning naming the worker. A worker leaving the service refuses it: kTimedOut too, and
  /// that worker is never asked again.
  Arrival poll(Batch& batch);
  /// Gives up the request of `batch` without blaming the worker (the batch is not needed,
  /// e.g. training stopped early); its answer is dropped when it arrives.
  void abandon(Batch& batch);
  /// Completes finished sends and late answers; call often.
  void progress();
  /// Says goodbye to every worker and waits, at most shutdown_grace, for the answers still due
  /// and (trainer 0) for every worker's done message. A worker that missed that is counted in
  /// stats().lost_workers and logged; its receives stay posted (they are cancelled by the
  /// destructor), since the job then ends without it (docs/data-service.md, "Shutdown").
  void finish();
  /// Counters so far.
  const WorkerClientStats& stats() const noexcept { return stats_; }
  /// Requests sent whose answers have not arrived (including given-up ones).
  std::size_t requests_in_flight() const noexcept { return pending_.size() + orphans_.size(); }
  /// Given-up requests whose late answers are still due (each holds a batch buffer).
  std::size_t given_up() const noexcept { return orphans_.size(); }
  /// Each worker as this trainer sees it (for the profiler).
  std::vector<offload::WorkerCounters> worker_counters() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct WorkerState {
    int rank = 0;
    int in_flight = 0;
    int given_up = 0;  // of in_flight: orphans, whose answers a dead worker never sends
    std::uint64_t next_sequence = 0;
    Clock::time_point skip_until{};
    bool left = false;             // it left the service (kLeaving): never asked again
    offload::WorkerCounters seen;  // what the profiler reads
  };
  struct Pending {
    int worker = 0;
    std::uint64_t sequence = 0;
    std::uint32_t epoch = 0;
    std::size_t step = 0;
    std::size_t samples = 0;
    Clock::time_point deadline{};
    std::vector<std::byte> meta;
    PixelBuffer pixels;                 // kPixels: the received images, before normalisation
    std::vector<MPI_Request> requests;  // the meta message, then the image chunks
    std::vector<MPI_Status> statuses;
  };
  struct Orphan {
    Pending pending;
    model::Tensor images;  // keeps the posted receive's memory alive
  };
  struct Outgoing {
    Request message;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  void send(int worker, const Request& message);
  std::vector<int> batch_shape(std::size_t samples) const;
  std::size_t bytes_per_sample() const;
  PixelBuffer pixel_buffer();
  std::pmr::memory_resource* pixel_memory() const;
  void deliver(Batch& batch, Pending& p, std::size_t samples);
  static double expected_finish(const WorkerState& w);
  static bool test(Pending& p);
  void on_timeout(Batch& batch, Pending&& p);
  void orphan(Batch& batch, Pending&& p);
  void settle_orphan(Orphan& orphan);
  void on_leaving(WorkerState& worker);
  void post_done_receives();
  bool settled();
  void report_lost();

  WorkerClientOptions options_;
  std::vector<WorkerState> workers_;
  std::size_t next_worker_ = 0;  // round-robin start among equally loaded workers
  std::unordered_map<const Batch*, Pending> pending_;
  std::list<Orphan> orphans_;
  std::deque<Outgoing> outgoing_;  // deque: posted buffers never move
  // Pixel staging buffers of settled requests, reused: a fresh one per request would cost a
  // page fault and a zero fill per byte.
  std::vector<PixelBuffer> spare_pixels_;
  // Trainer 0 only, from finish() on: each worker's done message (its index) and receive.
  std::vector<std::int32_t> done_from_;
  std::vector<MPI_Request> done_receives_;
  WorkerClientStats stats_;
  bool finished_ = false;
};

}  // namespace conflux::data
