// conflux-bench tcp: what conflux's transfers between two ranks reach against the raw TCP
// bandwidth between the same two ranks, measured in the same run. Rank 1 listens on a TCP
// socket at its own host's address, rank 0 streams bytes to it over plain sockets; then, in the
// same processes, rank 0 sends the same bytes as large MPI messages, and both ranks sum
// gradient-sized float buffers with conflux's gradient allreduce (comm::MpiAllreduceSync, as
// the trainers do). The measurements are interleaved in rounds and each is reported as a
// fraction of the round's TCP bandwidth. Between ranks on two hosts of tools/sim-cluster.sh
// this compares Open MPI's TCP transport with plain TCP over the same veth pairs. It also
// measures the parameters of docs/scaling.md's alpha-beta model: the latency of a small MPI
// message (alpha, half a ping-pong's round trip), the time per byte of large MPI_Send messages
// (beta) and of the float sum that a reduction applies to received bytes (gamma, on rank 0).

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "conflux/comm/gradient_sync.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"
#include "tcp_stream.hpp"

namespace conflux::bench {

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::size_t mib = 256;
  std::size_t message_mib = 16;
  std::string allreduce_mib = "1,4,16";
  int rounds = 5;
  int allreduce_iters = 10;
  std::size_t latency_bytes = 8;
  int latency_iters = 2000;
  double latency_s = 1;
  TcpStreamOptions tcp;
};

constexpr std::size_t kMiB = 1 << 20;

// The same bytes as MPI_Send/MPI_Recv messages of `message` bytes from rank 0 to rank 1, ended
// by a zero-byte answer; bytes/s on rank 0.
double mpi_bandwidth(const comm::Communicator& world, std::vector<char>& buffer,
                     std::size_t message) {
  world.barrier();
  const auto start = Clock::now();
  for (std::size_t at = 0; at < buffer.size(); at += message) {
    const int count = static_cast<int>(std::min(message, buffer.size() - at));
    if (world.rank() == 0) {
      CONFLUX_MPI_CHECK(MPI_Send(buffer.data() + at, count, MPI_BYTE, 1, 11, world.get()));
    } else {
      CONFLUX_MPI_CHECK(
          MPI_Recv(buffer.data() + at, count, MPI_BYTE, 0, 11, world.get(), MPI_STATUS_IGNORE));
    }
  }
  if (world.rank() == 1) {
    CONFLUX_MPI_CHECK(MPI_Send(nullptr, 0, MPI_BYTE, 0, 12, world.get()));
    return 0;
  }
  CONFLUX_MPI_CHECK(MPI_Recv(nullptr, 0, MPI_BYTE, 1, 12, world.get(), MPI_STATUS_IGNORE));
  return static_cast<double>(buffer.size()) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

// Half the round trip of a `bytes`-byte message between ranks 0 and 1 (MPI_Send there,
// MPI_Send back), averaged over round trips after 10 untimed ones, at most `iters` of them and
// no more than about `seconds`: the alpha of the alpha-beta model (docs/scaling.md). Rank 0
// decides when to stop and says so in the message's first byte, so both ranks agree. Seconds,
// on rank 0.
double mpi_half_round_trip(const comm::Communicator& world, std::size_t bytes, int iters,
                           double seconds) {
  std::vector<char> message(bytes, 1);
  const int count = static_cast<int>(bytes);
  const auto send = [&](int tag) {
    CONFLUX_MPI_CHECK(
        MPI_Send(message.data(), count, MPI_BYTE, 1 - world.rank(), tag, world.get()));
  };
  const auto receive = [&](int tag) {
    CONFLUX_MPI_CHECK(MPI_Recv(message.data(), count, MPI_BYTE, 1 - world.rank(), tag, world.get(),
                               MPI_STATUS_IGNORE));
  };
  world.barrier();
  if (world.rank() == 1) {
    do {
      receive(13);
      send(14);
    } while (message[0] != 0);
    return 0;
  }
  Clock::time_point start;
  int timed = 0;
  for (int k = 0;; ++k) {
    if (k == 10) start = Clock::now();
    timed = k - 10;
    const bool last =
        k >= 10 && (timed + 1 >= iters ||
                    std::chrono::duration<double>(Clock::now() - start).count() >= seconds);
    message[0] = last ? 0 : 1;
    send(13);
    receive(14);
    if (last) break;
  }
  return std::chrono::duration<double>(Clock::now() - start).count() / (2.0 * (timed + 1));
}

// Seconds per byte of the float sum y += x over `bytes` of floats (the reduction's arithmetic,
// gamma in docs/scaling.md), on this rank; the best of 3 passes after one untimed.
double sum_seconds_per_byte(std::size_t bytes) {
  std::vector<float> x(bytes / sizeof(float), 1.0f), y(bytes / sizeof(float), 0.0f);
  double best = 0;
  for (int pass = 0; pass <= 3; ++pass) {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (pass == 1 || (pass > 1 && t < best)) best = t;
  }
  CONFLUX_CHECK(y.front() == 4.0f, "tcp: the float sum gave {}, not 4", y.front());
  return best / static_cast<double>(bytes);
}

// Median seconds of conflux's gradient allreduce of `floats` floats (the slower rank's time
// per iteration, after one untimed sum).
double allreduce_seconds(const comm::Communicator& world, std::size_t floats, const Options& opt) {
  comm::MpiAllreduceSync sync(world, std::chrono::duration<double>(opt.tcp.timeout_s));
  std::vector<float> gradients(floats);
  std::vector<double> seconds;
  for (int k = 0; k <= opt.allreduce_iters; ++k) {
    std::fill(gradients.begin(), gradients.end(), 1.0f);  // repeated sums would overflow
    world.barrier();
    const auto start = Clock::now();
    sync.exchange(gradients);
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    CONFLUX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world.get()));
    CONFLUX_CHECK(gradients.front() == 2.0f && gradients.back() == 2.0f,
                  "tcp: the allreduce summed to {}, not 2", gradients.front());
    if (k > 0) seconds.push_back(t);
  }
  return median(seconds);
}

std::vector<std::size_t> split_sizes(const std::string& text) {
  std::vector<std::size_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    CONFLUX_REQUIRE(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
                        std::stoul(item) >= 1,
                    "tcp: --allreduce-mib wants MiB counts >= 1 separated by commas, got '{}'",
                    text);
    out.push_back(std::stoul(item));
  }
  return out;
}

// Every measurement of the run: bytes/s per round (rank 0's figures).
struct Measured {
  std::vector<double> tcp, mpi;
  std::vector<std::vector<double>> allreduce_s;   // [size][round]
  std::vector<double> latency_s, sum_s_per_byte;  // alpha and gamma, per round
};

Measured measure(const comm::Communicator& world, const Options& opt,
                 const std::vector<std::size_t>& sizes) {
  const TcpStream tcp(world, opt.tcp);
  if (world.rank() == 0) fmt::print("tcp: rank 0 streams to rank 1 at {}\n\n", tcp.endpoint());
  std::vector<char> buffer(opt.mib * kMiB, 1);
  Measured m;
  m.allreduce_s.resize(sizes.size());
  tcp.measure(buffer);  // warm-up: TCP's window and the pages of the buffer
  mpi_bandwidth(world, buffer, opt.message_mib * kMiB);
  for (int round = 0; round < opt.rounds; ++round) {
    m.tcp.push_back(tcp.measure(buffer));
    m.mpi.push_back(mpi_bandwidth(world, buffer, opt.message_mib * kMiB));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      m.allreduce_s[i].push_back(allreduce_seconds(world, sizes[i] * kMiB / sizeof(float), opt));
    }
    m.latency_s.push_back(
        mpi_half_round_trip(world, opt.latency_bytes, opt.latency_iters, opt.latency_s));
    m.sum_s_per_byte.push_back(sum_seconds_per_byte(opt.message_mib * kMiB));
  }
  return m;
}

void report_results(const Measured& m, const Options& opt, const std::vector<std::size_t>& sizes,
                    Report& report) {
  constexpr double kMB = 1 << 20;  // MiB, as data-service's goodput
  const double tcp = median(m.tcp);
  Table& table = report.add_table(
      Table("tcp",
            fmt::format("rank 0 -> rank 1, {} MiB per round, median of {} interleaved "
                        "rounds",
                        opt.mib, opt.rounds),
            {"path", {"MiB/s", 0}, {"% of TCP", 0}, "fraction per round"}));
  table.add_row({"raw TCP socket stream", tcp / kMB, 100.0, "-"});
  table.add_row(
      {fmt::format("MPI_Send/MPI_Recv, {} MiB messages", std::min(opt.message_mib, opt.mib)),
       median(m.mpi) / kMB, 100 * median(m.mpi) / tcp, per_round(ratios(m.mpi, m.tcp))});
  report.set_summary("tcp_MiBps", tcp / kMB);
  report.set_summary("mpi_send_fraction", median(m.mpi) / tcp);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<double> busbw;  // 2(n-1)/n * bytes / time with n = 2: bytes / time
    for (const double t : m.allreduce_s[i]) {
      busbw.push_back(static_cast<double>(sizes[i] * kMiB) / t);
    }
    table.add_row({fmt::format("gradient allreduce, {} MiB float32 (busbw)", sizes[i]),
                   median(busbw) / kMB, 100 * median(busbw) / tcp,
                   per_round(ratios(busbw, m.tcp))});
    report.set_summary(fmt::format("allreduce_{}MiB_fraction", sizes[i]), median(busbw) / tcp);
  }
  table.print();
  // The alpha-beta model's parameters (docs/scaling.md): beta from the MPI_Send row above.
  const double alpha_us = 1e6 * median(m.latency_s);
  const double beta_ns = 1e9 / median(m.mpi);
  const double gamma_ns = 1e9 * median(m.sum_s_per_byte);
  Table& model = report.add_table(
      Table("alpha_beta", "alpha-beta model parameters (docs/scaling.md), medians of the rounds",
            {"parameter", {"value", 3}, "unit", "measured as"}));
  model.add_row({"alpha", alpha_us, "us",
                 fmt::format("half an MPI ping-pong round trip of {} B, <= {} round trips "
                             "or {} s",
                             opt.latency_bytes, opt.latency_iters, opt.latency_s)});
  model.add_row(
      {"beta", beta_ns, "ns/B",
       fmt::format("1 / MPI_Send bandwidth, {} MiB messages", std::min(opt.message_mib, opt.mib))});
  model.add_row({"gamma", gamma_ns, "ns/B",
                 fmt::format("float sum y += x over {} MiB, rank 0", opt.message_mib)});
  report.set_summary("alpha_us", alpha_us);
  report.set_summary("beta_ns_per_byte", beta_ns);
  report.set_summary("gamma_ns_per_byte", gamma_ns);
  fmt::print("\n");
  model.print();
  fmt::print(
      "\nbusbw = 2(n-1)/n * bytes / time (nccl-tests' bus bandwidth; n = 2 ranks, so bytes / "
      "time): what each rank sends, and receives at the same time, per second in a ring "
      "allreduce. The TCP and MPI_Send rows are one direction only.\n");
}

}  // namespace

int run_tcp_bandwidth(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc(
      "conflux-bench tcp options (mpirun -np 2: rank 0 sends, rank 1 listens)");
  desc.add_options()("help,h", "show this help")(
      "mib", po::value(&opt.mib)->default_value(opt.mib),
      "MiB streamed per round over TCP and again over MPI_Send")(
      "message-mib", po::value(&opt.message_mib)->default_value(opt.message_mib),
      "size of one MPI_Send message")(
      "allreduce-mib", po::value(&opt.allreduce_mib)->default_value(opt.allreduce_mib),
      "gradient sizes of the allreduce, comma-separated")(
      "rounds", po::value(&opt.rounds)->default_value(opt.rounds),
      "interleaved rounds; the medians are reported")(
      "allreduce-iters", po::value(&opt.allreduce_iters)->default_value(opt.allreduce_iters),
      "timed allreduces per size and round (median)")(
      "latency-bytes", po::value(&opt.latency_bytes)->default_value(opt.latency_bytes),
      "message size of the ping-pong that measures alpha")(
      "latency-iters", po::value(&opt.latency_iters)->default_value(opt.latency_iters),
      "most ping-pong round trips per round")(
      "latency-s", po::value(&opt.latency_s)->default_value(opt.latency_s),
      "most seconds of ping-pong per round")(
      "address", po::value(&opt.tcp.address)->default_value(opt.tcp.address),
      "IPv4 address rank 1 listens on (empty: its host name's address)")(
      "timeout-s", po::value(&opt.tcp.timeout_s)->default_value(opt.tcp.timeout_s),
      "longest wait for one socket call or allreduce");
  const auto vm = parse_scenario_options("tcp", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(world.size() == 2, "tcp needs exactly 2 ranks (mpirun -np 2), not {}",
                  world.size());
  CONFLUX_REQUIRE(opt.mib >= 1 && opt.message_mib >= 1 && opt.message_mib <= 1024 &&
                      opt.rounds >= 1 && opt.allreduce_iters >= 1 && opt.tcp.timeout_s > 0 &&
                      opt.latency_bytes >= 1 && opt.latency_bytes <= (1u << 30) &&
                      opt.latency_iters >= 1 && opt.latency_s > 0,
                  "tcp: --mib >= 1, 1 <= --message-mib <= 1024, --rounds >= 1, "
                  "--allreduce-iters >= 1, --timeout-s > 0, 1 <= --latency-bytes <= 1 GiB, "
                  "--latency-iters >= 1 and --latency-s > 0 needed");
  const std::vector<std::size_t> sizes = split_sizes(opt.allreduce_mib);
  const Measured m = measure(world, opt, sizes);
  if (world.rank() != 0) return 0;
  Report report("tcp", common);
  report.add_parameters(*vm);
  report_results(m, opt, sizes, report);
  report.write();
  return 0;
}

}  // namespace conflux::bench
