#pragma once
/// @file error.hpp
/// The one error policy of conflux: exceptions that carry an exit code, the throwing rank, and
/// the source location, raised through the CONFLUX_* macros below and mapped to exit codes by
/// main().

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace conflux {

/// Process exit codes; scripts in slurm/ and tools/ rely on these values.
enum class ExitCode : int {
  kSuccess = 0,
  kBadInput = 2,  ///< invalid config, command line, or data file
  kRuntime = 3,   ///< failure while running (MPI, I/O, a peer rank failed)
  kBusy = 4,      ///< the run directory is in use by another job (not worth a blind relaunch)
  kRequeue = 75,  ///< checkpointed on a signal; asks the scheduler to requeue (EX_TEMPFAIL)
};

/// Records the MPI rank of this process so that every error it raises names it. Set once by
/// the MPI environment; -1 (unknown) before MPI is initialised.
void set_error_rank(int rank) noexcept;
/// The rank recorded by set_error_rank(), or -1.
int error_rank() noexcept;

/// Base of all conflux errors: what() is the bare message; describe() adds rank and location.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, std::string message, const char* file, int line);
  /// The exit code main() should return for this error.
  ExitCode code() const noexcept { return code_; }
  /// Rank that raised the error (-1 if unknown).
  int rank() const noexcept { return rank_; }
  /// Source file of the throw site.
  const char* file() const noexcept { return file_; }
  /// Source line of the throw site.
  int line() const noexcept { return line_; }
  /// "rank R: message (src/x.cpp:12)", the form printed to users.
  std::string describe() const;

 private:
  ExitCode code_;
  int rank_;
  const char* file_;
  int line_;
};

/// Bad user input: config, command line, data files. Exit code 2.
class InputError : public Error {
 public:
  InputError(std::string message, const char* file, int line)
      : Error(ExitCode::kBadInput, std::move(message), file, line) {}
};

/// Failure at run time (system calls, MPI, HDF5, peers). Exit code 3.
class RuntimeError : public Error {
 public:
  RuntimeError(std::string message, const char* file, int line)
      : Error(ExitCode::kRuntime, std::move(message), file, line) {}
};

/// The run directory is locked by another job. Exit code 4.
class BusyError : public Error {
 public:
  BusyError(std::string message, const char* file, int line)
      : Error(ExitCode::kBusy, std::move(message), file, line) {}
};

}  // namespace conflux

/// Throws conflux::InputError with a fmt-formatted message.
#define CONFLUX_INPUT_ERROR(...) \
  throw ::conflux::InputError(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)
/// Throws conflux::RuntimeError with a fmt-formatted message.
#define CONFLUX_RUNTIME_ERROR(...) \
  throw ::conflux::RuntimeError(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)
/// Checks user input: throws InputError (exit 2) when cond is false.
#define CONFLUX_REQUIRE(cond, ...)      \
  do {                                  \
    if (!(cond)) [[unlikely]]           \
      CONFLUX_INPUT_ERROR(__VA_ARGS__); \
  } while (0)
/// Checks a run-time condition: throws RuntimeError (exit 3) when cond is false.
#define CONFLUX_CHECK(cond, ...)          \
  do {                                    \
    if (!(cond)) [[unlikely]]             \
      CONFLUX_RUNTIME_ERROR(__VA_ARGS__); \
  } while (0)
