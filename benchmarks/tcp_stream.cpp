// The raw TCP stream between two ranks (tcp_stream.hpp). Every socket call is checked; send
// and receive time out, so that a peer that went away is an error, not a hang.

#include "tcp_stream.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "conflux/comm/agreement.hpp"
#include "conflux/comm/mpi.hpp"
#include "conflux/core/error.hpp"

namespace conflux::bench {

namespace {

constexpr std::size_t kMiB = 1 << 20;
constexpr std::size_t kChunk = 4 * kMiB;  // one send()/recv() call at most

std::string errno_text() {
  return std::strerror(errno);
}

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
  Socket s(::socket(AF_INET, SOCK_STREAM, 0), "socket");
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
  Socket s(::socket(AF_INET, SOCK_STREAM, 0), "socket");
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

}  // namespace

Socket::Socket(int fd, const char* what) : fd_(fd) {
  CONFLUX_CHECK(fd_ >= 0, "tcp: {}: {}", what, errno_text());
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

TcpStream::TcpStream(const comm::Communicator& ranks, const TcpStreamOptions& opt)
    : ranks_(ranks), sender_(opt.sender) {
  CONFLUX_CHECK(ranks.size() >= 2 && (sender_ == 0 || sender_ == 1),
                "tcp: a TCP stream needs ranks 0 and 1 (sender {}), not {} rank(s)", sender_,
                ranks.size());
  const int receiver = 1 - sender_;
  std::optional<Socket> listener;
  comm::run_agreed(ranks, "opening the TCP socket of the receiving rank", [&] {
    if (ranks.rank() != receiver) return;
    auto [s, where] = listen_on(own_address(opt.address));
    listener.emplace(std::move(s));
    endpoint_ = where;
  });
  endpoint_ = ranks.broadcast(endpoint_, receiver);
  comm::run_agreed(ranks, "connecting the sending rank to the receiving one over TCP", [&] {
    if (ranks.rank() == sender_) socket_.emplace(connect_to(endpoint_, opt.timeout_s));
    if (ranks.rank() != receiver) return;
    set_timeouts(*listener, opt.timeout_s);  // accept() too: a sender that failed is no hang
    socket_.emplace(::accept(listener->fd(), nullptr, nullptr), "accept");
    set_timeouts(*socket_, opt.timeout_s);
  });
}

double TcpStream::measure(std::vector<char>& buffer) const {
  ranks_.barrier();
  char ack = 1;
  if (ranks_.rank() == 1 - sender_) {
    recv_all(*socket_, buffer.data(), buffer.size());
    send_all(*socket_, &ack, 1);
  }
  double bytes_per_s = 0;
  if (ranks_.rank() == sender_) {
    const auto start = std::chrono::steady_clock::now();
    send_all(*socket_, buffer.data(), buffer.size());
    recv_all(*socket_, &ack, 1);
    bytes_per_s = static_cast<double>(buffer.size()) /
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  CONFLUX_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, &bytes_per_s, 1, MPI_DOUBLE, MPI_MAX, ranks_.get()));
  return bytes_per_s;
}

}  // namespace conflux::bench
