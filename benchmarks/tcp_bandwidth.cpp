// conflux-bench tcp: what conflux's transfers between two ranks reach against the raw TCP
// bandwidth between the same two ranks, measured in the same run. Rank 1 listens on a TCP
// socket at its own host's address, rank 0 streams bytes to it over plain sockets; then, in the
// same processes, rank 0 sends the same bytes as large MPI messages, and both ranks sum
// gradient-sized float buffers with conflux's gradient allreduce (comm::MpiAllreduceSync, as
// the trainers do). The measurements are interleaved in rounds and each is reported as a
// fraction of the round's TCP bandwidth. Between ranks on two hosts of tools/sim-cluster.sh
// this compares Open MPI's TCP transport with plain TCP over the same veth pairs.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/gradient_sync.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

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
  std::string address;  // empty: rank 1's host name resolved
  double timeout_s = 60;
};

constexpr std::size_t kMiB = 1 << 20;
constexpr std::size_t kChunk = 4 * kMiB;  // one send()/recv() call at most

std::string errno_text() {
  return std::strerror(errno);
}

// A socket closed on every path.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) { CONFLUX_CHECK(fd_ >= 0, "tcp: socket: {}", errno_text()); }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

// Send and receive time out, so that a peer that went away is an error, not a hang.
void set_timeouts(const Socket& s, double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  CONFLUX_CHECK(setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
                    setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0,
                "tcp: setsockopt(SO_RCVTIMEO/SO_SNDTIMEO): {}", errno_text());
}

// The IPv4 address of this host's name (inside a host of the simulated cluster, its eth0
// address, which /etc/hosts names), or `given`.
std::string own_address(const std::string& given) {
  if (!given.empty()) return given;
  char host[256] = {};
  CONFLUX_CHECK(gethostname(host, sizeof host - 1) == 0, "tcp: gethostname: {}", errno_text());
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host, nullptr, &hints, &found);
  CONFLUX_CHECK(rc == 0 && found != nullptr,
                "tcp: cannot resolve this host's name '{}' to an IPv4 address: {} (give "
                "--address)",
                host, gai_strerror(rc));
  char text[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  const bool ok = inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr;
  freeaddrinfo(found);
  CONFLUX_CHECK(ok, "tcp: inet_ntop: {}", errno_text());
  return text;
}

sockaddr_in ipv4(const std::string& address, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  CONFLUX_REQUIRE(inet_pton(AF_INET, address.c_str(), &a.sin_addr) == 1,
                  "tcp: '{}' is not an IPv4 address (--address)", address);
  return a;
}

// Rank 1's listening socket on `address`, an ephemeral port; returns it with "ADDRESS PORT".
std::pair<Socket, std::string> listen_on(const std::string& address) {
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a = ipv4(address, 0);
  CONFLUX_CHECK(::bind(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0,
                "tcp: bind to {}: {}", address, errno_text());
  CONFLUX_CHECK(::listen(s.fd(), 1) == 0, "tcp: listen: {}", errno_text());
  socklen_t len = sizeof a;
  CONFLUX_CHECK(getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len) == 0,
                "tcp: getsockname: {}", errno_text());
  return {std::move(s), fmt::format("{} {}", address, ntohs(a.sin_port))};
}

Socket connect_to(const std::string& endpoint, double timeout_s) {
  std::istringstream in(endpoint);
  std::string address;
  int port = 0;
  in >> address >> port;
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  set_timeouts(s, timeout_s);
  const sockaddr_in a = ipv4(address, port);
  CONFLUX_CHECK(::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0,
                "tcp: connect to {}:{}: {}", address, port, errno_text());
  return s;
}

void send_all(const Socket& s, const char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::send(s.fd(), data, std::min(bytes, kChunk), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    CONFLUX_CHECK(n > 0, "tcp: send: {}", n < 0 ? errno_text() : "nothing sent");
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void recv_all(const Socket& s, char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::recv(s.fd(), data, std::min(bytes, kChunk), 0);
    if (n < 0 && errno == EINTR) continue;
    CONFLUX_CHECK(n > 0, "tcp: recv: {}", n < 0 ? errno_text() : "the peer closed the connection");
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

// The TCP connection from rank 0 to rank 1 (rank 1's end on its own host's address).
Socket connect_ranks(const comm::Communicator& world, const Options& opt, std::string& endpoint) {
  std::optional<Socket> listener;
  comm::run_agreed(world, "opening the TCP socket on rank 1", [&] {
    if (world.rank() != 1) return;
    auto [s, where] = listen_on(own_address(opt.address));
    listener.emplace(std::move(s));
    endpoint = where;
  });
  endpoint = world.broadcast(endpoint, 1);
  std::optional<Socket> connection;
  comm::run_agreed(world, "connecting rank 0 to rank 1 over TCP", [&] {
    if (world.rank() == 0) connection.emplace(connect_to(endpoint, opt.timeout_s));
    if (world.rank() != 1) return;
    set_timeouts(*listener, opt.timeout_s);  // accept() too: a rank 0 that failed is no hang
    const int fd = ::accept(listener->fd(), nullptr, nullptr);
    CONFLUX_CHECK(fd >= 0, "tcp: accept on {}: {}", endpoint, errno_text());
    connection.emplace(fd);
    set_timeouts(*connection, opt.timeout_s);
  });
  return std::move(*connection);
}

// Rank 0 streams `buffer` to rank 1; rank 1 answers one byte once it has all of it. Bytes/s on
// rank 0, from the first byte sent to the answer.
double tcp_bandwidth(const comm::Communicator& world, const Socket& s, std::vector<char>& buffer) {
  world.barrier();
  char ack = 1;
  if (world.rank() == 1) {
    recv_all(s, buffer.data(), buffer.size());
    send_all(s, &ack, 1);
    return 0;
  }
  const auto start = Clock::now();
  send_all(s, buffer.data(), buffer.size());
  recv_all(s, &ack, 1);
  return static_cast<double>(buffer.size()) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

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

// Median seconds of conflux's gradient allreduce of `floats` floats (the slower rank's time
// per iteration, after one untimed sum).
double allreduce_seconds(const comm::Communicator& world, std::size_t floats, const Options& opt) {
  comm::MpiAllreduceSync sync(world, std::chrono::duration<double>(opt.timeout_s));
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
  std::vector<std::vector<double>> allreduce_s;  // [size][round]
};

Measured measure(const comm::Communicator& world, const Options& opt,
                 const std::vector<std::size_t>& sizes) {
  std::string endpoint;
  const Socket s = connect_ranks(world, opt, endpoint);
  if (world.rank() == 0) fmt::print("tcp: rank 0 streams to rank 1 at {}\n\n", endpoint);
  std::vector<char> buffer(opt.mib * kMiB, 1);
  Measured m;
  m.allreduce_s.resize(sizes.size());
  tcp_bandwidth(world, s, buffer);  // warm-up: TCP's window and the pages of the buffer
  mpi_bandwidth(world, buffer, opt.message_mib * kMiB);
  for (int round = 0; round < opt.rounds; ++round) {
    m.tcp.push_back(tcp_bandwidth(world, s, buffer));
    m.mpi.push_back(mpi_bandwidth(world, buffer, opt.message_mib * kMiB));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      m.allreduce_s[i].push_back(allreduce_seconds(world, sizes[i] * kMiB / sizeof(float), opt));
    }
  }
  return m;
}

std::string per_round(const std::vector<double>& x, const std::vector<double>& tcp) {
  std::vector<double> f;
  for (std::size_t i = 0; i < x.size(); ++i) f.push_back(x[i] / tcp[i]);
  return fmt::format("[{:.2f}]", fmt::join(f, " "));
}

void report_results(const Measured& m, const Options& opt, const std::vector<std::size_t>& sizes,
                    Report& report) {
  constexpr double kMB = 1e6;
  const double tcp = median(m.tcp);
  Table& table = report.add_table(
      Table("tcp",
            fmt::format("rank 0 -> rank 1, {} MiB per round, median of {} interleaved "
                        "rounds",
                        opt.mib, opt.rounds),
            {"path", {"MB/s", 0}, {"% of TCP", 0}, "fraction per round"}));
  table.add_row({"raw TCP socket stream", tcp / kMB, 100.0, "-"});
  table.add_row({fmt::format("MPI_Send/MPI_Recv, {} MiB messages", opt.message_mib),
                 median(m.mpi) / kMB, 100 * median(m.mpi) / tcp, per_round(m.mpi, m.tcp)});
  report.set_summary("tcp_MBps", tcp / kMB);
  report.set_summary("mpi_send_fraction", median(m.mpi) / tcp);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<double> busbw;  // 2(n-1)/n * bytes / time with n = 2: bytes / time
    for (const double t : m.allreduce_s[i]) {
      busbw.push_back(static_cast<double>(sizes[i] * kMiB) / t);
    }
    table.add_row({fmt::format("gradient allreduce, {} MiB float32 (busbw)", sizes[i]),
                   median(busbw) / kMB, 100 * median(busbw) / tcp, per_round(busbw, m.tcp)});
    report.set_summary(fmt::format("allreduce_{}MiB_fraction", sizes[i]), median(busbw) / tcp);
  }
  table.print();
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
      "address", po::value(&opt.address)->default_value(opt.address),
      "IPv4 address rank 1 listens on (empty: its host name's address)")(
      "timeout-s", po::value(&opt.timeout_s)->default_value(opt.timeout_s),
      "longest wait for one socket call or allreduce");
  const auto vm = parse_scenario_options("tcp", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(world.size() == 2, "tcp needs exactly 2 ranks (mpirun -np 2), not {}",
                  world.size());
  CONFLUX_REQUIRE(opt.mib >= 1 && opt.message_mib >= 1 && opt.message_mib <= 1024 &&
                      opt.rounds >= 1 && opt.allreduce_iters >= 1 && opt.timeout_s > 0,
                  "tcp: --mib >= 1, 1 <= --message-mib <= 1024, --rounds >= 1, "
                  "--allreduce-iters >= 1 and --timeout-s > 0 needed");
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
