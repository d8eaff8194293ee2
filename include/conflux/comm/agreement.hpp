#pragma once
/// @file agreement.hpp
/// Collective failure agreement: a phase that may fail on some ranks (config, data files) is
/// run on every rank, then all ranks learn whether any failed, so none is left waiting in a
/// later collective (docs/design.md invariant 5).

#include <functional>

#include "conflux/comm/communicator.hpp"

namespace conflux::comm {

/// Raised on every rank when a collectively agreed phase failed on one or more ranks. On the
/// failing ranks it carries their own message; on the others, the lowest failing rank's.
class AgreedFailure : public Error {
 public:
  AgreedFailure(ExitCode code, std::string message, int failed_rank, const char* file, int line)
      : Error(code, std::move(message), file, line), failed_rank_(failed_rank) {}
  /// Lowest rank on which the phase failed.
  int failed_rank() const noexcept { return failed_rank_; }

 private:
  int failed_rank_;
};

/// Runs `phase` on this rank, then agrees with all ranks of `comm`: if any rank threw a
/// conflux::Error (or std::exception), every rank throws AgreedFailure with the worst exit
/// code. Must be called by all ranks of `comm`.
void run_agreed(const Communicator& comm, const std::function<void()>& phase);

}  // namespace conflux::comm
