#include "conflux/comm/agreement.hpp"

namespace conflux::comm {

void run_agreed(const Communicator& comm, const std::function<void()>& phase) {
  int local_code = 0;
  std::string local_message;
  const char* file = __FILE__;
  int line = __LINE__;
  try {
    phase();
  } catch (const Error& e) {
    local_code = static_cast<int>(e.code());
    local_message = e.what();
    file = e.file();
    line = e.line();
  } catch (const std::exception& e) {
    local_code = static_cast<int>(ExitCode::kRuntime);
    local_message = e.what();
  }
  const auto worst = comm.allreduce_max(local_code);
  if (worst == 0) return;
  const auto first_failed =
      static_cast<int>(comm.allreduce_min(local_code != 0 ? comm.rank() : comm.size()));
  const std::string first_message = comm.broadcast(local_message, first_failed);
  if (local_code != 0) {
    throw AgreedFailure(static_cast<ExitCode>(local_code), local_message, first_failed, file, line);
  }
  throw AgreedFailure(
      static_cast<ExitCode>(worst),
      fmt::format("stopping because rank {} failed: {}", first_failed, first_message), first_failed,
      __FILE__, __LINE__);
}

}  // namespace conflux::comm
