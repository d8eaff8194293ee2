#include "conflux/comm/mpi.hpp"

#include <thread>

namespace conflux::comm {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("code {}", code);
  return std::string(text, static_cast<std::size_t>(length));
}

MpiEnvironment::MpiEnvironment(int& argc, char**& argv) {
  int provided = 0;
  CONFLUX_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
  CONFLUX_CHECK(provided >= MPI_THREAD_FUNNELED,
                "the MPI library does not support MPI_THREAD_FUNNELED (provides level {})",
                provided);
  CONFLUX_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CONFLUX_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  CONFLUX_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  set_error_rank(rank_);
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiEnvironment::abort(int code) const noexcept {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

void wait_for(MPI_Request& request, std::chrono::duration<double> timeout, const std::string& what,
              MPI_Status* status) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (long polls = 0;; ++polls) {
    int done = 0;
    CONFLUX_MPI_CHECK(MPI_Test(&request, &done, status));
    if (done) return;
    // Spin briefly for low latency, then yield to ranks sharing the core, then sleep so an
    // idle rank costs no CPU.
    if (polls < 2000) continue;
    const auto waited = Clock::now() - start;
    if (waited > timeout) {
      CONFLUX_RUNTIME_ERROR("timed out after {:.1f} s waiting for {}",
                            std::chrono::duration<double>(waited).count(), what);
    }
    if (waited < std::chrono::milliseconds(20)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 100000 ? 50 : 2000));
    }
  }
}

}  // namespace conflux::comm
