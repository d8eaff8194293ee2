#include "conflux/core/cpu_throttle.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <vector>

#include "conflux/core/cpu_time.hpp"
#include "conflux/core/error.hpp"

namespace conflux {
namespace {

// A signal handler can reach only static state; this is the one piece the held threads read:
// the CLOCK_MONOTONIC nanosecond at which they may run again.
std::atomic<std::int64_t> g_resume_at_ns{0};
std::atomic<bool> g_throttle_active{false};

int pause_signal() {
  return SIGRTMIN + 4;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Runs on the paused thread: sleep (async-signal-safe) until the controller's deadline. The
// deadline is re-read so that a longer pause set meanwhile is honoured.
void hold_thread(int) {
  const int saved_errno = errno;
  for (;;) {
    const std::int64_t until = g_resume_at_ns.load(std::memory_order_acquire);
    if (monotonic_ns() >= until) break;
    timespec ts{static_cast<time_t>(until / 1'000'000'000),
                static_cast<long>(until % 1'000'000'000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  }
  errno = saved_errno;
}

std::vector<pid_t> other_threads(pid_t self) {
  std::vector<pid_t> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (const dirent* entry = readdir(dir)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid > 0 && tid != self) tids.push_back(tid);
  }
  closedir(dir);
  return tids;
}

}  // namespace

CpuThrottle::CpuThrottle(CpuThrottleOptions options) : options_(options) {
  CONFLUX_CHECK(options_.share > 0, "CPU share must be positive, got {}", options_.share);
  CONFLUX_CHECK(options_.period.count() > 0, "throttle period must be positive");
  CONFLUX_CHECK(!g_throttle_active.exchange(true), "only one CpuThrottle may be active");
  struct sigaction action {};
  action.sa_handler = hold_thread;
  action.sa_flags = SA_RESTART;  // interrupted read/write/futex calls resume transparently
  sigemptyset(&action.sa_mask);
  if (sigaction(pause_signal(), &action, nullptr) != 0) {
    g_throttle_active = false;
    CONFLUX_RUNTIME_ERROR("sigaction for the CPU throttle failed: errno {}", errno);
  }
  start_wall_ = std::chrono::steady_clock::now();
  start_cpu_ = process_cpu_seconds();
  controller_ = std::thread([this] { control_loop(); });
}

CpuThrottle::~CpuThrottle() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  controller_.join();
  g_resume_at_ns.store(0, std::memory_order_release);  // release anyone still held
  g_throttle_active = false;
}

void CpuThrottle::set_share(double share) {
  CONFLUX_CHECK(share > 0, "CPU share must be positive, got {}", share);
  std::lock_guard lock(mutex_);
  options_.share = share;
  start_wall_ = std::chrono::steady_clock::now();
  start_cpu_ = process_cpu_seconds();
  paused_seconds_ = 0;
  pauses_ = 0;
}

double CpuThrottle::share() const {
  std::lock_guard lock(mutex_);
  return options_.share;
}

CpuThrottleStats CpuThrottle::stats() const {
  std::lock_guard lock(mutex_);
  return {process_cpu_seconds() - start_cpu_,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_wall_).count(),
          paused_seconds_, pauses_};
}

void CpuThrottle::control_loop() {
  using namespace std::chrono;
  std::unique_lock lock(mutex_);
  // CFS-style token bucket: the budget grows at `share` CPU-seconds per second, is capped at
  // one period's worth (idle time must not bank a long burst) and pays for the CPU used.
  double budget = 0;
  auto last_wall = steady_clock::now();
  double last_cpu = process_cpu_seconds();
  double last_share = options_.share;
  while (!stopping_) {
    const double share = options_.share;
    const double period = options_.period.count();
    if (share != last_share) budget = 0;  // set_share() restarts the accounting
    last_share = share;
    const auto now = steady_clock::now();
    const double cpu = process_cpu_seconds();
    budget = std::min(budget + share * duration<double>(now - last_wall).count() - (cpu - last_cpu),
                      share * period);
    last_wall = now;
    last_cpu = cpu;
    if (budget < 0) {
      // Hold everyone until the debt is paid and a period's burst has refilled, as CFS does at
      // the end of a throttled period: holding only for the debt would pause every millisecond.
      const double hold = std::min(period + -budget / share, 10.0);
      ++pauses_;
      paused_seconds_ += hold;
      lock.unlock();
      pause_others_until(now + duration_cast<steady_clock::duration>(duration<double>(hold)));
      lock.lock();
      continue;
    }
    // Check again when the budget could run out with every core busy, at most each period/4.
    const double headroom = budget / std::max(1.0, share);
    wake_.wait_for(lock, duration<double>(std::clamp(headroom, 0.001, period / 4)));
  }
}

void CpuThrottle::pause_others_until(std::chrono::steady_clock::time_point until) {
  const std::int64_t until_ns =
      monotonic_ns() +
      std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now())
          .count();
  g_resume_at_ns.store(until_ns, std::memory_order_release);
  const pid_t pid = getpid();
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  for (const pid_t tid : other_threads(self)) {
    // A thread that exited meanwhile gives ESRCH: nothing to hold.
    syscall(SYS_tgkill, pid, tid, pause_signal());
  }
  std::unique_lock lock(mutex_);
  wake_.wait_until(lock, until, [this] { return stopping_; });
}

}  // namespace conflux
