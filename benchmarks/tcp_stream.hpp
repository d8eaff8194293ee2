#pragma once
/// @file tcp_stream.hpp
/// The raw TCP bandwidth between ranks 0 and 1 of a communicator, over plain sockets: the
/// yardstick against which conflux-bench's tcp and data-service scenarios report MPI
/// transfers, the gradient allreduce and the data service's goodput in the same run.

#include <optional>
#include <string>
#include <vector>

#include "conflux/comm/communicator.hpp"

namespace conflux::bench {

/// A socket closed on every path.
class Socket {
 public:
  /// Takes `fd`; RuntimeError naming `what` (the call that made it) when it is negative.
  Socket(int fd, const char* what);
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  Socket& operator=(Socket&&) = delete;
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

/// Which rank sends, where the other listens and how long a socket call may wait.
struct TcpStreamOptions {
  int sender = 0;         ///< 0 or 1; the other of ranks 0 and 1 receives (and listens)
  std::string address{};  ///< IPv4 address; empty: what the receiver's host name resolves to
  double timeout_s = 60;  ///< longest wait of one socket call
};

/// A TCP connection between ranks 0 and 1 of `ranks` (every rank of `ranks` takes part in
/// making it; the others hold no socket). The receiver listens on an ephemeral port of its
/// host's address and tells the sender over MPI, so that the stream takes the path between
/// their hosts that Open MPI's TCP transport takes.
class TcpStream {
 public:
  TcpStream(const comm::Communicator& ranks, const TcpStreamOptions& opt);
  /// "ADDRESS PORT" the receiver listens on.
  const std::string& endpoint() const noexcept { return endpoint_; }
  /// The sender streams `buffer` to the receiver, which answers one byte when it has all of
  /// it: bytes/s measured on the sender from the first byte sent to the answer, returned on
  /// every rank. Collective over `ranks`.
  double measure(std::vector<char>& buffer) const;

 private:
  const comm::Communicator& ranks_;
  int sender_;
  std::string endpoint_;
  std::optional<Socket> socket_;
};

}  // namespace conflux::bench
