// The run records' field lists (telemetry/run_record.hpp) and their one writer, reader and
// TensorBoard view (telemetry/run_record_io.hpp).
#include "conflux/telemetry/run_record_io.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace conflux::telemetry {
namespace {

using testing::expect_input_error;

// The field list's entries of record type R, in order.
template <typename R>
std::vector<FieldInfo> record_fields() {
  std::vector<FieldInfo> fields;
  const R record{};
  R::for_each_field(record, [&fields](const FieldInfo& f, const auto&) { fields.push_back(f); });
  return fields;
}

template <typename R>
R read_line(std::string_view text, const std::string& where = "run/x.jsonl:1") {
  R record;
  read_record(parse_json(text, where), where, record);
  return record;
}

template <typename R>
void expect_unique_names() {
  std::set<std::string_view> names, tags;
  for (const FieldInfo& f : record_fields<R>()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    if (!f.tag.empty()) {
      EXPECT_TRUE(tags.insert(f.tag).second) << f.tag;
    }
    EXPECT_FALSE(f.doc.empty()) << f.name;
  }
}

TEST(RunRecord, FieldListsHaveUniqueNamesAndTagsAndADocEach) {
  expect_unique_names<StepRecord>();
  expect_unique_names<EpochRecord>();
  expect_unique_names<WorkerRecord>();
  expect_unique_names<WindowRecord>();
  expect_unique_names<DecisionRecord>();
  // A resumed run finds a line's step by the prefix {"step": (train/run_recorder.cpp).
  EXPECT_EQ(record_fields<StepRecord>().front().name, "step");
}

TEST(RunRecord, WritesFieldsInListOrderAndLeavesUnsetOptionalsOut) {
  StepRecord r;
  EXPECT_TRUE(std::isnan(r.loss));  // unset: written as null, never as a made-up 0
  r.step = 12;
  r.epoch = 2;
  r.loss = 0.25;
  std::string line = record_json(r);
  EXPECT_EQ(line.substr(0, 42), R"({"step": 12, "epoch": 2, "epoch_step": 0, )");
  EXPECT_NE(line.find(R"("loss": 0.25, "accuracy": null)"), std::string::npos) << line;
  EXPECT_EQ(line.find("grad_norm"), std::string::npos) << line;
  r.grad_norm = 1.5;
  line = record_json(r);
  EXPECT_EQ(line.substr(line.size() - 19), R"(, "grad_norm": 1.5})") << line;

  DecisionRecord d{.trainer = 1, .step = 7, .t_s = 2.5, .from = 0, .to = 0.5, .reason = "a \"b\""};
  EXPECT_EQ(record_json(d),
            R"({"trainer": 1, "step": 7, "t_s": 2.5, "from": 0, "to": 0.5, "reason": "a \"b\""})");
}

TEST(RunRecord, ReadsBackWhatItWrites) {
  WindowRecord w;
  w.trainer = 3;
  w.t_s = 1.25;
  w.window_s = 0.5;
  w.steps = 9;
  w.offload_ratio = 0.75;
  w.workers.push_back({.worker = 0, .live = true, .answers = 4, .service_batches_per_s = 12.5});
  w.workers.push_back({.worker = 1, .live = false, .timeouts = 2, .queue_depth = 3});
  const auto back = read_line<WindowRecord>(record_json(w));
  EXPECT_EQ(record_json(back), record_json(w));
  ASSERT_EQ(back.workers.size(), 2u);
  EXPECT_FALSE(back.workers[1].live);
  EXPECT_EQ(back.workers[1].queue_depth, 3u);
  EXPECT_TRUE(std::isnan(back.steps_per_s));  // null is NaN again

  EpochRecord e;
  e.epoch = 4;
  e.audited = true;
  e.noise_steps = 6;
  e.noise_scale = std::nan("");
  const auto eb = read_line<EpochRecord>(record_json(e));
  EXPECT_EQ(record_json(eb), record_json(e));
  ASSERT_TRUE(eb.noise_scale.has_value());  // written as null, so present
  EXPECT_TRUE(std::isnan(*eb.noise_scale));
  EXPECT_FALSE(read_line<EpochRecord>(R"({"epoch": 1})").noise_steps.has_value());
}

TEST(RunRecord, AFieldTheLineLacksKeepsItsValue) {
  DecisionRecord d;
  d.trainer = 5;
  read_record(parse_json(R"({"t_s": 1, "to": 0.5})", "x"), "x", d);
  EXPECT_EQ(d.trainer, 5);
  EXPECT_EQ(d.to, 0.5);
  EXPECT_TRUE(std::isnan(d.from));
}

TEST(RunRecord, BadLinesAreInputErrorsNamingWhereAndKey) {
  expect_input_error([] { read_line<StepRecord>(R"({"loss": 1})", "r/steps.jsonl:4"); },
                     {"r/steps.jsonl:4", "expected a number at \"step\", found nothing"});
  expect_input_error([] { read_line<StepRecord>(R"({"step": null})"); },
                     {"expected a number at \"step\", found null"});
  expect_input_error([] { read_line<StepRecord>(R"({"step": 2.5})"); },
                     {"run/x.jsonl:1", "a whole number", "at \"step\", found 2.5"});
  expect_input_error([] { read_line<StepRecord>(R"({"step": -1})"); },
                     {"a whole number in [0, ", "found -1"});
  expect_input_error([] { read_line<StepRecord>(R"({"step": 1, "loss": "low"})"); },
                     {"expected a number at \"loss\", found a string"});
  expect_input_error([] { read_line<DecisionRecord>(R"({"t_s": 1, "to": 1, "reason": 3})"); },
                     {"expected a string at \"reason\", found a number"});
  expect_input_error([] { read_line<WindowRecord>(R"({"t_s": 1, "workers": [1]})"); },
                     {"expected an array of objects at \"workers\", found a number"});
  expect_input_error([] { read_line<EpochRecord>(R"({"epoch": 1, "audited": 1})"); },
                     {"expected true or false at \"audited\", found a number"});
}

TEST(RunRecord, TensorBoardScalarsAreTheTaggedFinitePresentFields) {
  StepRecord r;
  r.step = 3;
  r.loss = 0.5;
  r.accuracy = 0.25;
  r.eta_s = 10;  // untagged
  auto scalars = tensorboard_scalars(r);
  ASSERT_EQ(scalars.size(), 2u);  // learning_rate and the rest are NaN
  EXPECT_EQ(scalars[0].tag, "train/loss");
  EXPECT_EQ(scalars[1].tag, "train/accuracy");
  EXPECT_EQ(scalars[1].value, 0.25);
  r.grad_norm = 2.0;
  scalars = tensorboard_scalars(r);
  ASSERT_EQ(scalars.size(), 3u);
  EXPECT_EQ(scalars[2].tag, "train/grad_norm");
  EXPECT_EQ(scalars[2].value, 2.0);

  EpochRecord e;
  e.epoch = 2;
  e.train_loss = 1;
  e.test_loss = std::nan("");  // evaluation off: not a scalar
  scalars = tensorboard_scalars(e);
  ASSERT_EQ(scalars.size(), 2u);
  EXPECT_EQ(scalars[0].tag, "epoch/epoch");
  EXPECT_EQ(scalars[0].value, 2.0);
  EXPECT_EQ(scalars[1].tag, "epoch/train_loss");
}

}  // namespace
}  // namespace conflux::telemetry
