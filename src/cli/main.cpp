// conflux: the command-line entry point. Dispatches to the command the arguments name (the
// list: command_registry.cpp) and maps errors to the documented exit codes (0 ok, 2 bad input,
// 3 runtime failure).

#include <boost/program_options.hpp>

#include <exception>

#include "command.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/log.hpp"

int main(int argc, char** argv) {
  using namespace conflux;
  const Logger log;
  try {
    // Before MPI and before any thread: OpenBLAS chose its kernels when it loaded.
    pin_blas_kernels(argv);
    return cli::dispatch(argc, argv);
  } catch (const Error& e) {
    log.error("{}", e.describe());
    return static_cast<int>(e.code());
  } catch (const boost::program_options::error& e) {
    log.error("{} (see --help)", e.what());
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const std::exception& e) {
    log.error("unexpected: {}", e.what());
    return static_cast<int>(ExitCode::kRuntime);
  }
}
