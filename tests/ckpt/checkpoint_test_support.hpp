#pragma once
/// @file checkpoint_test_support.hpp
/// What the checkpoint tests share: a state with every field set, bit-exact comparison of two
/// states, raw file bytes, and a fixture with a checkpoint path in a temporary directory.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "conflux/ckpt/training_state.hpp"

namespace conflux::ckpt::test_support {

namespace fs = std::filesystem;

/// A state with every field set to a distinctive value. Parameters: layer1.weight [3, 4],
/// layer1.bias [3], head.weight [2, 3], head.bias [2] = 23 floats.
inline TrainingState filled_state() {
  TrainingState s;
  s.epoch = 7;
  s.step = 13;
  s.global_step = 7 * 20 + 13;
  s.steps_per_epoch = 20;
  s.global_batch = 64;
  s.dataset_size = 1250;
  s.seed = 0xfedcba9876543210ULL;
  s.trainers = 3;
  s.workers = 2;
  s.tensors = {{"layer1.weight", {3, 4}, 0},
               {"layer1.bias", {3}, 12},
               {"head.weight", {2, 3}, 15},
               {"head.bias", {2}, 21}};
  for (int i = 0; i < 23; ++i) s.params.push_back(0.1f * static_cast<float>(i) - 1.0f);
  // Values that a lossy or converting writer would not keep bit for bit.
  s.params[3] = -0.0f;
  s.params[4] = std::numeric_limits<float>::denorm_min();
  s.params[5] = std::numeric_limits<float>::infinity();
  s.params[6] = std::nextafter(1.0f, 2.0f);
  s.optimizer.name = "adam";
  s.optimizer.steps = 38;
  s.optimizer.buffers = {{"exp_avg", {}}, {"exp_avg_sq", {}}};
  for (float p : s.params) {
    s.optimizer.buffers[0].values.push_back(p * 0.5f + 0.25f);
    s.optimizer.buffers[1].values.push_back(p * p);
  }
  s.optimizer.buffers[0].values[0] = std::numeric_limits<float>::quiet_NaN();
  s.lr = 0.0123456789;
  s.progress = {{.next_batch_index = 39, .offload = {.ratio = 0.25, .credit = -0.125}},
                {.next_batch_index = 40, .offload = {.ratio = 0.5, .credit = 0.375}},
                {.next_batch_index = 41, .offload = {.ratio = 1.0 / 3.0, .credit = 1e-300}}};
  s.epoch_loss_sum = 123.456;
  s.epoch_correct = 700;
  s.epoch_samples = 832;
  s.epoch_seconds = 4.5;
  s.elapsed_seconds = 99.25;
  s.audit_counts = {1, 0, 2, 1, 1};
  s.config_toml = "[run]\nseed = 42\nname = \"ünïcode ✓\"\n\n[train]\nbatch_size = 64\n";
  s.metrics = {R"({"epoch":0,"loss":2.1})", R"({"epoch":1,"loss":1.7})"};
  s.created = "2024-05-06T07:08:09+0200";
  return s;
}

/// True when a and b hold the same floats bit for bit (NaNs and signed zeros included).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// True when a and b hold the same doubles bit for bit.
inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

/// Expects every field of a and b to be equal, numbers bit for bit.
inline void expect_same_state(const TrainingState& a, const TrainingState& b) {
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.global_step, b.global_step);
  EXPECT_EQ(a.steps_per_epoch, b.steps_per_epoch);
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.dataset_size, b.dataset_size);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.trainers, b.trainers);
  EXPECT_EQ(a.workers, b.workers);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].offset, b.tensors[i].offset);
  }
  EXPECT_TRUE(same_bits(a.params, b.params));
  EXPECT_EQ(a.optimizer.name, b.optimizer.name);
  EXPECT_EQ(a.optimizer.steps, b.optimizer.steps);
  ASSERT_EQ(a.optimizer.buffers.size(), b.optimizer.buffers.size());
  for (std::size_t i = 0; i < a.optimizer.buffers.size(); ++i) {
    EXPECT_EQ(a.optimizer.buffers[i].name, b.optimizer.buffers[i].name);
    EXPECT_TRUE(same_bits(a.optimizer.buffers[i].values, b.optimizer.buffers[i].values));
  }
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.lr), std::bit_cast<std::uint64_t>(b.lr));
  ASSERT_EQ(a.progress.size(), b.progress.size());
  for (std::size_t t = 0; t < a.progress.size(); ++t) {
    EXPECT_EQ(a.progress[t].next_batch_index, b.progress[t].next_batch_index);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(a.progress[t].offload.ratio),
              std::bit_cast<std::uint64_t>(b.progress[t].offload.ratio));
    EXPECT_EQ(std::bit_cast<std::uint64_t>(a.progress[t].offload.credit),
              std::bit_cast<std::uint64_t>(b.progress[t].offload.credit));
  }
  EXPECT_TRUE(same_bits(std::vector<double>{a.epoch_loss_sum, a.epoch_correct, a.epoch_samples,
                                            a.epoch_seconds, a.elapsed_seconds},
                        std::vector<double>{b.epoch_loss_sum, b.epoch_correct, b.epoch_samples,
                                            b.epoch_seconds, b.elapsed_seconds}));
  EXPECT_TRUE(same_bits(a.audit_counts, b.audit_counts));
  EXPECT_EQ(a.config_toml, b.config_toml);
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_EQ(a.created, b.created);
}

/// The whole file at `path`.
inline std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Replaces the file at `path` by `bytes`.
inline void put_file_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A temporary directory and the path of a checkpoint in it.
class CheckpointTest : public ::testing::Test {
 protected:
  conflux::testing::TempDir dir_;
  fs::path file_ = dir_.path() / "ckpt-000000153.h5";
};

}  // namespace conflux::ckpt::test_support
