#pragma once
/// @file mpi.hpp
/// MPI start-up/shutdown as an RAII object and the checked-call macro for MPI return codes.

#include <mpi.h>

#include <chrono>
#include <string>

#include "conflux/core/error.hpp"

namespace conflux::comm {

/// Human-readable text of an MPI error code.
std::string mpi_error_string(int code);

/// Initialises MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI) and finalises it on
/// destruction; makes MPI calls on MPI_COMM_WORLD return codes instead of aborting, and
/// records this process's rank for error messages. One per process, created by main().
class MpiEnvironment {
 public:
  MpiEnvironment(int& argc, char**& argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;
  /// Rank in MPI_COMM_WORLD.
  int world_rank() const noexcept { return rank_; }
  /// Size of MPI_COMM_WORLD.
  int world_size() const noexcept { return size_; }
  /// Ends every rank of the job with `code` (for failures the other ranks cannot know of).
  [[noreturn]] void abort(int code) const noexcept;

 private:
  int rank_ = 0;
  int size_ = 1;
};

/// Waits for a non-blocking MPI request without burning a core while idle and without waiting
/// forever: polls, yields, then sleeps briefly between polls; RuntimeError naming `what` when
/// `timeout` passes.
void wait_for(MPI_Request& request, std::chrono::duration<double> timeout, const std::string& what,
              MPI_Status* status = MPI_STATUS_IGNORE);

}  // namespace conflux::comm

/// Checks the return code of an MPI call; throws RuntimeError with the call and MPI's text.
#define CONFLUX_MPI_CHECK(call)                                                        \
  do {                                                                                 \
    if (const int conflux_mpi_rc = (call); conflux_mpi_rc != MPI_SUCCESS) [[unlikely]] \
      CONFLUX_RUNTIME_ERROR("MPI call failed: {}: {}", #call,                          \
                            ::conflux::comm::mpi_error_string(conflux_mpi_rc));        \
  } while (0)
