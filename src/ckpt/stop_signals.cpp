#include "conflux/ckpt/stop_signals.hpp"

#include <csignal>
#include <cstring>

#include "conflux/core/error.hpp"

namespace conflux::ckpt {

namespace {

constexpr int kSignals[] = {SIGUSR1, SIGTERM, SIGINT};

// Process-wide by necessity: a signal handler cannot reach anything else.
volatile std::sig_atomic_t g_received = 0;
volatile std::sig_atomic_t g_repeats = 0;
bool g_installed = false;
struct sigaction g_previous[3];

extern "C" void on_stop_signal(int signal) {
  if (g_received == 0) {
    g_received = signal;
  } else {
    g_repeats = g_repeats + 1;
  }
}

}  // namespace

StopSignals::StopSignals(AtEnd at_end) : at_end_(at_end) {
  CONFLUX_CHECK(!g_installed, "stop-signal handlers are already installed");
  g_received = 0;
  g_repeats = 0;
  for (int i = 0; i < 3; ++i) {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    // SA_RESTART: a signal must not break the blocking calls of MPI or the file system. No
    // SA_RESETHAND: a repeated signal must stay harmless (see the header).
    action.sa_flags = SA_RESTART;
    CONFLUX_CHECK(sigaction(kSignals[i], &action, &g_previous[i]) == 0,
                  "cannot install a handler for {}: {}", name(kSignals[i]), std::strerror(errno));
  }
  g_installed = true;
}

StopSignals::~StopSignals() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int i = 0; i < 3; ++i) {
    const bool keep_ignoring = g_received != 0 || at_end_ == AtEnd::kIgnore;
    sigaction(kSignals[i], keep_ignoring ? &ignore : &g_previous[i], nullptr);
  }
  g_installed = false;
}

int StopSignals::received() const noexcept {
  return g_received;
}

int StopSignals::repeats() const noexcept {
  return g_repeats;
}

const char* StopSignals::name(int signal) noexcept {
  switch (signal) {
    case SIGUSR1:
      return "SIGUSR1";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "another signal";
  }
}

}  // namespace conflux::ckpt
