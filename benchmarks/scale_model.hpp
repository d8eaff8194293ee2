#pragma once
/// @file scale_model.hpp
/// The scale model of docs/scaling.md, as formulas: the alpha-beta cost of the allreduce
/// algorithms Open MPI's libnbc runs for MPI_Iallreduce (the gradient sum, the audit's counts),
/// and the data service's fan-in and request credits. Pure arithmetic on measured parameters
/// (conflux-bench tcp, offload), so that conflux-bench scale-model and its unit test share it.

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace conflux::bench::scale {

/// One kind of hop between two ranks: alpha (s per message), beta (s per byte).
struct Link {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  /// Seconds to move one message of `bytes`.
  double message_s(double bytes) const { return alpha_s + bytes * beta_s_per_byte; }
};

/// Where the ranks sit: `per_host` consecutive ranks share a host (Open MPI's by-slot mapping);
/// hops within a host take `shm`, hops between hosts `net`. `gamma` is the reduction's
/// arithmetic, s per byte reduced.
struct Machine {
  Link net, shm;
  double gamma_s_per_byte = 0;
  int per_host = 1;
  /// The link between ranks `distance` apart in a power-of-two pattern aligned to 0 (ranks r
  /// and r + distance with r a multiple of 2 * distance): within a host when distance is below
  /// per_host and per_host is a power of two.
  const Link& hop(long distance) const {
    const bool pow2 = per_host > 0 && (per_host & (per_host - 1)) == 0;
    return pow2 && distance < per_host ? shm : net;
  }
};

/// ceil(log2 p) for p >= 1.
inline int ceil_log2(long p) {
  int l = 0;
  while ((1L << l) < p) ++l;
  return l;
}

/// libnbc's binomial allreduce (allred_sched_diss): a binomial-tree reduce to rank 0, then a
/// binomial-tree broadcast; each of the ceil(log2 p) levels moves the whole buffer once up
/// (and reduces it) and once down, so the critical path is the sum of its levels.
inline double binomial_s(long p, double bytes, const Machine& m) {
  double t = 0;
  for (int r = 1; r <= ceil_log2(p); ++r) {
    const Link& l = m.hop(1L << (r - 1));
    t += 2 * l.message_s(bytes) + bytes * m.gamma_s_per_byte;
  }
  return t;
}

/// libnbc's ring (allred_sched_ring): p - 1 reduce-scatter and p - 1 allgather rounds, each
/// moving a 1/p segment to the next rank; every round waits for its slowest hop, which is
/// between hosts as soon as the ring leaves one.
inline double ring_s(long p, double bytes, const Machine& m) {
  if (p < 2) return 0;
  const Link& l = p > m.per_host ? m.net : m.shm;
  const double segment = bytes / static_cast<double>(p);
  return 2.0 * static_cast<double>(p - 1) * l.message_s(segment) +
         static_cast<double>(p - 1) * segment * m.gamma_s_per_byte;
}

/// Rabenseifner's reduce-scatter + allgather (libnbc's redscat_allgather, recursive vector
/// halving with distance doubling) for a power-of-two p: level i moves bytes / 2^i to a rank
/// 2^(i-1) away, down and back up.
inline double rabenseifner_s(long p, double bytes, const Machine& m) {
  double t = 0;
  for (int i = 1; i <= ceil_log2(p); ++i) {
    const double part = bytes / static_cast<double>(1L << i);
    t += 2 * m.hop(1L << (i - 1)).message_s(part) + part * m.gamma_s_per_byte;
  }
  return t;
}

/// The data service in steady state (docs/data-service.md, docs/scaling.md): one worker builds
/// `worker_samples_per_s`; one trainer consumes `trainer_samples_per_s` (its compute ceiling),
/// of which the share `ratio` comes from workers, in batches of `batch` samples of
/// `sample_bytes` on the wire.
struct Service {
  double worker_samples_per_s = 0;
  double trainer_samples_per_s = 0;
  double ratio = 1;
  double batch = 1;
  double sample_bytes = 0;
};

/// Trainers one worker feeds at full speed: its build rate over one trainer's remote demand.
inline double fan_in_cpu(const Service& s) {
  return s.worker_samples_per_s / (s.ratio * s.trainer_samples_per_s);
}

/// Trainers one worker's link feeds: the link's samples/s over one trainer's remote demand.
inline double fan_in_link(const Service& s, const Link& l) {
  return 1.0 / (s.sample_bytes * l.beta_s_per_byte) / (s.ratio * s.trainer_samples_per_s);
}

/// Seconds from a request to its whole answer when the worker is not queueing: the request's
/// latency, the batch's build, and its transfer (meta message + ~1 MiB chunks,
/// docs/data-service.md).
inline double request_round_trip_s(const Service& s, const Link& l) {
  const double payload = s.batch * s.sample_bytes;
  const double chunks = std::max(1.0, std::ceil(payload / (1 << 20)));
  return l.alpha_s + s.batch / s.worker_samples_per_s + (1 + chunks) * l.alpha_s +
         payload * l.beta_s_per_byte;
}

/// Requests a trainer must keep in flight in all so that its remote batches arrive as fast as
/// it consumes them (Little's law: rate x round trip, the bandwidth-delay product in batches),
/// rounded up.
inline double requests_in_flight(const Service& s, const Link& l) {
  return std::ceil(s.ratio * s.trainer_samples_per_s / s.batch * request_round_trip_s(s, l));
}

/// Requests that must wait at one worker, from all its trainers together, so that it never
/// idles: the batch it builds plus those covering the request latency and the previous
/// answer's transfer (the bandwidth-delay product in batch builds), rounded up.
inline double worker_requests_needed(const Service& s, const Link& l) {
  const double build = s.batch / s.worker_samples_per_s;
  return std::ceil((request_round_trip_s(s, l) - build) / build) + 1;
}

}  // namespace conflux::bench::scale
