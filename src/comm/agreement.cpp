#include "conflux/comm/agreement.hpp"

#include <algorithm>

namespace conflux::comm {

void run_agreed(const Communicator& comm, std::string_view what,
                const std::function<void()>& phase) {
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
  } catch (const std::bad_alloc& e) {
    // Name what ran out, not this file: the allocation itself cannot say.
    local_code = static_cast<int>(ExitCode::kRuntime);
    local_message = fmt::format(
        "rank {}: out of memory while {} ({}); give the rank more memory (the node's, or "
        "limits.memory_mb) or make the job smaller",
        comm.rank(), what, e.what());
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

namespace {

std::string encode(const NamedValues& values) {
  std::string text;
  for (const auto& [name, value] : values) {
    text += fmt::format("{}:{}{}:{}", name.size(), name, value.size(), value);
  }
  return text;
}

NamedValues decode(std::string_view text) {
  NamedValues values;
  const auto field = [&text] {
    const std::size_t colon = text.find(':');
    const std::size_t n = std::stoul(std::string(text.substr(0, colon)));
    std::string out(text.substr(colon + 1, n));
    text.remove_prefix(colon + 1 + n);
    return out;
  };
  while (!text.empty()) {
    std::string name = field();
    values.emplace_back(std::move(name), field());
  }
  return values;
}

// Long values (a layer list, a hash) are cut for the message; the start is where they differ
// most often, and the names say the rest.
std::string shorten(const std::string& value) {
  return value.size() <= 80 ? value : value.substr(0, 77) + "...";
}

}  // namespace

void agree_with_root(const Communicator& comm, std::string_view what, const NamedValues& values,
                     std::string_view hint) {
  const std::string root_text = comm.broadcast(comm.rank() == 0 ? encode(values) : "", 0);
  run_agreed(comm, "comparing the ranks' " + std::string(what), [&] {
    if (comm.rank() == 0) return;
    const NamedValues root = decode(root_text);
    for (std::size_t i = 0; i < std::max(root.size(), values.size()); ++i) {
      const std::string name = i < values.size() ? values[i].first : root[i].first;
      const std::string mine = i < values.size() ? values[i].second : "(nothing)";
      const std::string theirs = i < root.size() ? root[i].second : "(nothing)";
      if (i < values.size() && i < root.size() && root[i] == values[i]) continue;
      CONFLUX_INPUT_ERROR("rank {}'s {} differs from rank 0's: {} is {} here but {} on rank 0; {}",
                          comm.rank(), what, name, shorten(mine), shorten(theirs), hint);
    }
  });
}

}  // namespace conflux::comm
