#include <gtest/gtest.h>

#include <fstream>

#include "../support/temp_dir.hpp"
#include "conflux/core/error.hpp"
#include "conflux/plan/fit_file.hpp"
#include "conflux/plan/sweep_data.hpp"

namespace conflux::plan {
namespace {

TEST(PlanFiles, ProfileRoundTrips) {
  testing::TempDir dir;
  Sweep p;
  p.config_name = "mnist-mlp";
  p.dataset = "mnist";
  p.epoch_samples = 60000;
  p.gradient_mb = 1.59;
  p.points.push_back({.workers = 2,
                      .memory_mb = 512,
                      .batch = 64,
                      .steps = 20,
                      .iteration_s = 0.0123,
                      .compute_s = 0.01,
                      .sync_s = 0.002,
                      .transfer_s = 0.0004,
                      .cpu_share_used = 0.29});
  p.points.push_back({.workers = 2, .memory_mb = 128, .batch = 64, .out_of_memory = true});
  p.points.push_back({.workers = 1,
                      .memory_mb = 3000,
                      .batch = 64,
                      .threads = 2,
                      .steps = 20,
                      .iteration_s = 0.004});
  p.builds.push_back({.batch = 64, .batches = 12, .seconds = 0.0031});
  write_sweep(dir.path() / "p.toml", p);
  const Sweep q = read_sweep(dir.path() / "p.toml");
  EXPECT_EQ(q.dataset, "mnist");
  EXPECT_EQ(q.epoch_samples, 60000u);
  ASSERT_EQ(q.points.size(), 3u);
  EXPECT_EQ(q.points[0].threads, 0);  // not recorded
  EXPECT_EQ(q.points[2].threads, 2);
  EXPECT_DOUBLE_EQ(q.points[0].iteration_s, 0.0123);
  EXPECT_DOUBLE_EQ(q.points[0].sync_s, 0.002);
  EXPECT_TRUE(q.points[1].out_of_memory);
  ASSERT_EQ(q.builds.size(), 1u);
  EXPECT_EQ(q.builds[0].batch, 64);
  EXPECT_EQ(q.builds[0].batches, 12);
  EXPECT_DOUBLE_EQ(q.builds[0].seconds, 0.0031);
}

TEST(PlanFiles, EmptyOrBrokenProfilesAreClearErrors) {
  testing::TempDir dir;
  Sweep empty;
  empty.dataset = "mnist";
  empty.epoch_samples = 10;
  write_sweep(dir.path() / "empty.toml", empty);
  try {
    read_sweep(dir.path() / "empty.toml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no measured point"), std::string::npos);
  }
  std::ofstream(dir.path() / "bad.toml") << "epoch_samples = 10\n[[point]]\nworkers = 1\n";
  try {
    read_sweep(dir.path() / "bad.toml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos);
  }
  Sweep cifar = empty;
  cifar.dataset = "cifar10";
  EXPECT_THROW(merge_sweeps({empty, cifar}, {"a.toml", "b.toml"}), InputError);
  // A build time that is not a measurement, and a 'build' that is not a list of tables.
  const std::string head =
      "epoch_samples = 10\ngradient_mb = 1.0\nmb_per_vcpu = 1769.0\n[[point]]\nworkers = 1\n"
      "memory_mb = 512\nbatch = 16\nsteps = 5\niteration_s = 0.01\ncompute_s = 0.01\n"
      "sync_s = 0.0\ntransfer_s = 0.001\n";
  std::ofstream(dir.path() / "build.toml")
      << head << "[[build]]\nbatch = 16\nbatches = 3\nseconds = 0\n";
  testing::expect_input_error(
      [&] { read_sweep(dir.path() / "build.toml"); },
      {"build.toml", "[[build]] with batch = 16, batches = 3, seconds = 0"});
  std::ofstream(dir.path() / "list.toml") << "build = 3\n" << head;
  testing::expect_input_error([&] { read_sweep(dir.path() / "list.toml"); },
                              {"list.toml: 'build' must be a list of [[build]] tables"});
}

TEST(PlanFiles, ModelRoundTrips) {
  testing::TempDir dir;
  PerformanceModel m;
  m.train = {.a = 30, .b = 12, .m = 40, .c = 0.001};
  m.transfer = {.k1 = 0.5, .k2 = -0.95};
  m.sync.rows.push_back({2, {256, 1024}, {0.004, 0.002}});
  m.gradient_mb = 1.59;
  m.epoch_samples = 60000;
  m.dataset = "mnist";
  m.train_loo_errors = {-0.125, 0.03};
  write_fit_file(dir.path() / "m.toml", m);
  const PerformanceModel r = read_fit_file(dir.path() / "m.toml");
  EXPECT_DOUBLE_EQ(r.train.a, 30);
  EXPECT_DOUBLE_EQ(r.train.c, 0.001);
  EXPECT_DOUBLE_EQ(r.transfer.k2, -0.95);
  ASSERT_EQ(r.sync.rows.size(), 1u);
  EXPECT_EQ(r.sync.rows[0].seconds, (std::vector<double>{0.004, 0.002}));
  EXPECT_EQ(r.epoch_samples, 60000u);
  EXPECT_EQ(r.train_loo_errors, m.train_loo_errors);
  EXPECT_FALSE(r.prices_input());  // no [compute] and [input] written without them
  EXPECT_EQ(r.train_threads, 0);   // not recorded
  EXPECT_TRUE(r.measured_threads().empty());
  m.compute = {.a = 20, .b = 3, .m = 50, .c = 0.0005};
  m.input = {.p0 = 0.0002, .p1 = 0.00004};
  write_fit_file(dir.path() / "m.toml", m);
  m.train_threads = 1;
  m.more_threads.push_back({.threads = 2,
                            .train = {.a = 25, .b = 12, .m = 40, .c = 0.001},
                            .compute = {.a = 15, .b = 3, .m = 50, .c = 0}});
  write_fit_file(dir.path() / "m.toml", m);
  const PerformanceModel in = read_fit_file(dir.path() / "m.toml");
  EXPECT_EQ(in.measured_threads(), (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(in.train_at(2).a, 25);
  EXPECT_DOUBLE_EQ(in.compute_at(2).a, 15);
  ASSERT_TRUE(in.prices_input());
  EXPECT_DOUBLE_EQ(in.compute.b, 3);
  EXPECT_DOUBLE_EQ(in.input.p0, 0.0002);
  EXPECT_DOUBLE_EQ(in.input.p1, 0.00004);
  // [[more_threads]] without the thread count of [train] is refused.
  {
    std::ifstream in(dir.path() / "m.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("train_threads = 1\n");
    ASSERT_NE(at, std::string::npos) << text;
    text.erase(at, std::string("train_threads = 1\n").size());
    std::ofstream(dir.path() / "y.toml") << text;
    EXPECT_THROW(read_fit_file(dir.path() / "y.toml"), InputError);
  }
  std::ofstream(dir.path() / "x.toml") << "dataset = \"mnist\"\n";
  EXPECT_THROW(read_fit_file(dir.path() / "x.toml"), InputError);
}

}  // namespace
}  // namespace conflux::plan
