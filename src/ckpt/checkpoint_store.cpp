#include "conflux/ckpt/checkpoint_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "conflux/core/atomic_file.hpp"

namespace conflux::ckpt {

namespace fs = std::filesystem;

namespace {

const std::regex kCheckpointName(R"(ckpt-([0-9]{9,})\.h5)");
// Temporary files of the writers of checkpoints and of `latest` (core/atomic_file's names).
const std::regex kTempName(R"((?:ckpt-[0-9]{9,}\.h5|latest)\.tmp-([0-9]+))");
constexpr const char* kLatest = "latest";

// Checkpoint files in `dir` with their steps, newest first.
std::vector<std::pair<std::uint64_t, fs::path>> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<std::uint64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, kCheckpointName)) {
      found.emplace_back(std::stoull(m[1].str()), entry.path());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  return found;
}

std::string read_latest(const fs::path& dir) {
  std::ifstream in(dir / kLatest);
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

CheckpointStore::CheckpointStore(fs::path dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  CONFLUX_CHECK(keep_ >= 1, "a checkpoint store must keep at least one checkpoint");
}

fs::path CheckpointStore::path_for(std::uint64_t global_step) const {
  return dir_ / fmt::format("ckpt-{:09}.h5", global_step);
}

WriteStats CheckpointStore::publish(const TrainingState& state) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  CONFLUX_CHECK(!ec, "cannot create the checkpoint directory {}: {}", dir_.string(), ec.message());
  const fs::path path = path_for(state.global_step);
  const WriteStats stats = write_checkpoint(path, state);
  // Only a durable checkpoint becomes `latest`.
  publish_text_file(dir_ / kLatest, path.filename().string() + "\n");

  const auto all = list_checkpoints(dir_);
  for (std::size_t i = static_cast<std::size_t>(keep_); i < all.size(); ++i) {
    if (all[i].second != path) fs::remove(all[i].second, ec);
  }
  // A writer killed mid-write leaves its temporary file behind; ours never outlives publish().
  const std::string own_pid = std::to_string(::getpid());
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, kTempName) && m[1].str() != own_pid) {
      fs::remove(entry.path(), ec);
    }
  }
  return stats;
}

fs::path CheckpointStore::set_aside(const fs::path& rejected) const {
  fs::path aside = rejected;
  aside += ".corrupt";
  std::error_code ec;
  fs::rename(rejected, aside, ec);
  CONFLUX_CHECK(!ec, "cannot rename the rejected checkpoint {} to {}: {}", rejected.string(),
                aside.string(), ec.message());
  return aside;
}

std::vector<fs::path> CheckpointStore::candidates() const {
  std::vector<fs::path> out;
  const std::string latest = read_latest(dir_);
  std::smatch m;
  if (std::regex_match(latest, m, kCheckpointName) && fs::exists(dir_ / latest)) {
    out.push_back(dir_ / latest);
  }
  for (const auto& [step, path] : list_checkpoints(dir_)) {
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

std::optional<FoundCheckpoint> CheckpointStore::newest_valid(const SkipReporter& on_skip) const {
  for (const fs::path& path : candidates()) {
    try {
      return FoundCheckpoint{path, read_checkpoint(path)};
    } catch (const CorruptCheckpoint& e) {
      if (on_skip) on_skip(path, e.what());
    }
  }
  return std::nullopt;
}

}  // namespace conflux::ckpt
