#pragma once
/// @file agreement.hpp
/// Collective failure agreement: a phase that may fail on some ranks (config, data files) is
/// run on every rank, then all ranks learn whether any failed, so none is left waiting in a
/// later collective (docs/design.md invariant 5).

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
/// code. `what` names the phase for an out-of-memory message ("loading the training data").
/// Must be called by all ranks of `comm`.
void run_agreed(const Communicator& comm, std::string_view what,
                const std::function<void()>& phase);
/// run_agreed for a phase with no name of its own.
inline void run_agreed(const Communicator& comm, const std::function<void()>& phase) {
  run_agreed(comm, "this phase", phase);
}

/// Named values (config keys, data files with their hashes) that every rank must share.
using NamedValues = std::vector<std::pair<std::string, std::string>>;

/// Agrees that every rank of `comm` holds rank 0's `values`: rank 0's are broadcast, and a rank
/// whose differ raises InputError naming itself, the first name that differs and both values;
/// every rank then throws AgreedFailure (exit 2). `what` names the set ("config"). `hint` ends
/// the message (what to check). Collective.
void agree_with_root(const Communicator& comm, std::string_view what, const NamedValues& values,
                     std::string_view hint);

}  // namespace conflux::comm
