#include "conflux/ckpt/checkpoint_store.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "../support/temp_dir.hpp"
#include "conflux/ckpt/async_writer.hpp"
#include "conflux/ckpt/stop_signals.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TrainingState state_at(std::uint64_t step) {
  TrainingState s;
  s.global_step = step;
  s.step = step;
  s.steps_per_epoch = 1000;
  s.global_batch = 8;
  s.dataset_size = 8000;
  s.trainers = 1;
  s.tensors = {{"w", {2, 3}, 0}};
  s.params = {1, 2, 3, 4, 5, static_cast<float>(step)};
  s.optimizer = {.name = "sgd", .steps = step, .buffers = {{"momentum_buffer", {}}}};
  s.optimizer.buffers[0].values.assign(6, 0.5f);
  s.progress = {{step, 0.0, 0.0}};
  s.config_toml = "[run]\nseed = 1\n";
  return s;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointStore, KeepsTheNewestAndPointsLatestAtIt) {
  TempDir dir;
  CheckpointStore store(dir.path() / "ckpt", 2);
  for (std::uint64_t step : {10, 20, 30}) store.publish(state_at(step));
  EXPECT_EQ(names_in(dir.path() / "ckpt"),
            (std::vector<std::string>{"ckpt-000000020.h5", "ckpt-000000030.h5", "latest"}));
  std::ifstream latest(dir.path() / "ckpt" / "latest");
  std::string name;
  std::getline(latest, name);
  EXPECT_EQ(name, "ckpt-000000030.h5");
}

// A store in `dir` keeping `keep`, holding checkpoints of steps 10 and 20, the newer truncated.
CheckpointStore with_corrupt_newest(const fs::path& dir, int keep) {
  CheckpointStore store(dir, keep);
  store.publish(state_at(10));
  store.publish(state_at(20));
  fs::resize_file(store.path_for(20), 100);
  return store;
}

TEST(CheckpointStore, FallsBackPastACorruptNewestAndReportsIt) {
  TempDir dir;
  const CheckpointStore store = with_corrupt_newest(dir.path(), 3);
  std::vector<fs::path> skipped;
  const auto found =
      store.newest_valid([&](const fs::path& p, const std::string&) { skipped.push_back(p); });
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->path, store.path_for(10));
  EXPECT_EQ(found->state.params.back(), 10.0f);
  EXPECT_EQ(skipped, std::vector<fs::path>{store.path_for(20)});
}

TEST(CheckpointStore, EmptyOrMissingDirectoryHasNothingToResume) {
  TempDir dir;
  EXPECT_FALSE(CheckpointStore(dir.path() / "none", 3).newest_valid({}).has_value());
  EXPECT_FALSE(CheckpointStore(dir.path(), 3).newest_valid({}).has_value());
}

TEST(CheckpointStore, ASetAsideCheckpointIsNoCandidateAndNotCountedAsKept) {
  TempDir dir;
  CheckpointStore store = with_corrupt_newest(dir.path(), 2);
  EXPECT_EQ(store.set_aside(store.path_for(20)), dir.path() / "ckpt-000000020.h5.corrupt");
  EXPECT_EQ(store.candidates(), std::vector<fs::path>{store.path_for(10)});
  store.publish(state_at(30));  // keep = 2 valid ones: 10 and 30
  EXPECT_EQ(names_in(dir.path()),
            (std::vector<std::string>{"ckpt-000000010.h5", "ckpt-000000020.h5.corrupt",
                                      "ckpt-000000030.h5", "latest"}));
}

TEST(CheckpointStore, RemovesTemporaryFilesOfKilledWriters) {
  TempDir dir;
  CheckpointStore store(dir.path(), 3);
  std::ofstream(dir.path() / "ckpt-000000005.h5.tmp-999999") << "half";
  std::ofstream(dir.path() / "latest.tmp-999999") << "ckpt-0000";  // a killed `latest` writer
  store.publish(state_at(10));
  EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"ckpt-000000010.h5", "latest"}));
}

TEST(AsyncCheckpointWriter, PersistsInTheBackgroundAndReusesBuffers) {
  TempDir dir;
  AsyncCheckpointWriter writer(CheckpointStore(dir.path(), 5));
  for (std::uint64_t step : {1, 2, 3}) {
    TrainingState s = writer.take_buffer();
    const TrainingState fresh = state_at(step);
    s.params = fresh.params;  // as a capture would: into the recycled buffers
    s.optimizer = fresh.optimizer;
    s.tensors = fresh.tensors;
    s.progress = fresh.progress;
    s.global_step = step;
    s.steps_per_epoch = fresh.steps_per_epoch;
    s.config_toml = fresh.config_toml;
    writer.submit(std::move(s));
  }
  writer.flush();
  EXPECT_EQ(writer.stats().written, 3u);
  EXPECT_GT(writer.stats().bytes, 0u);
  EXPECT_EQ(writer.last_published(), CheckpointStore(dir.path(), 5).path_for(3));
  EXPECT_EQ(read_checkpoint(writer.last_published()).params.back(), 3.0f);
}

TEST(AsyncCheckpointWriter, AFailedWriteIsReportedAndNothingLaterBecomesLatest) {
  TempDir dir;
  const fs::path blocked = dir.path() / "blocked";
  std::ofstream(blocked) << "a file where the checkpoint directory should be";
  AsyncCheckpointWriter writer(CheckpointStore(blocked, 3), dir.path() / "earlier.h5");
  writer.submit(state_at(1));
  EXPECT_THROW(writer.flush(), RuntimeError);
  EXPECT_TRUE(writer.failed());
  EXPECT_NE(writer.error().find("checkpoint at step 1 could not be written"), std::string::npos);
  EXPECT_NE(writer.error().find("earlier.h5 is intact"), std::string::npos);
  writer.submit(state_at(2));
  EXPECT_THROW(writer.flush(), RuntimeError);
  EXPECT_EQ(writer.stats().written, 0u);
}

TEST(StopSignals, RecordsTheFirstSignalAndRestoresHandlersWhenNoneCame) {
  {
    const StopSignals signals;
    EXPECT_EQ(signals.received(), 0);
    EXPECT_THROW(StopSignals(), RuntimeError);  // one at a time
  }
  struct sigaction now {};
  sigaction(SIGUSR1, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  const StopSignals again;  // a new watch starts clean
  EXPECT_EQ(again.received(), 0);
  std::raise(SIGUSR1);
  EXPECT_EQ(again.received(), SIGUSR1);
  EXPECT_STREQ(StopSignals::name(again.received()), "SIGUSR1");
}

// A time limit sends USR1 and then TERM; mpirun forwards repeats: none may kill the process
// (before, a second TERM took the default action, and a USR1 after the watch ended did).
TEST(StopSignals, EveryStopSignalAfterTheFirstIsHarmless) {
  {
    const StopSignals signals;
    std::raise(SIGTERM);
    std::raise(SIGTERM);
    std::raise(SIGINT);
    std::raise(SIGUSR1);
    EXPECT_EQ(signals.received(), SIGTERM);
    EXPECT_EQ(signals.repeats(), 3);
  }
  for (const int s : {SIGUSR1, SIGTERM, SIGINT}) {
    struct sigaction now {};
    sigaction(s, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_IGN) << StopSignals::name(s);
    std::raise(s);  // the process is on its way out with 75: still harmless
  }
  for (const int s : {SIGUSR1, SIGTERM, SIGINT}) std::signal(s, SIG_DFL);
}

// SLURM signals each node on its own: a worker whose job already ended through the trainers'
// signal could get its copy after the watch, and died of it (exit 138 for the whole step).
TEST(StopSignals, AWatchThatEndsWithTheProcessLeavesTheSignalsIgnored) {
  {
    const StopSignals signals(StopSignals::AtEnd::kIgnore);
    EXPECT_EQ(signals.received(), 0);
  }
  for (const int s : {SIGUSR1, SIGTERM, SIGINT}) {
    struct sigaction now {};
    sigaction(s, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_IGN) << StopSignals::name(s);
    std::raise(s);
  }
  for (const int s : {SIGUSR1, SIGTERM, SIGINT}) std::signal(s, SIG_DFL);
}

}  // namespace
}  // namespace conflux::ckpt
