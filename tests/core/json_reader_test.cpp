#include "conflux/core/json_reader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conflux/core/json.hpp"

namespace conflux {
namespace {

TEST(JsonReader, ParsesEveryKindOfValue) {
  const JsonValue v = parse_json(
      R"( {"a": 1, "b": -2.5e3, "c": "x\"y\\z\n\u00e9\ud83d\ude00", "d": [true, false, null],
           "e": {}, "f": []} )",
      "test");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.as_object().size(), 6u);
  EXPECT_EQ(v.as_object()[0].first, "a");  // file order kept
  EXPECT_DOUBLE_EQ(v.find("a")->as_number(), 1);
  EXPECT_DOUBLE_EQ(v.find("b")->as_number(), -2500);
  EXPECT_EQ(v.find("c")->as_string(), "x\"y\\z\n\xc3\xa9\xf0\x9f\x98\x80");
  const auto& d = v.find("d")->as_array();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[0].as_bool());
  EXPECT_FALSE(d[1].as_bool());
  EXPECT_TRUE(d[2].is_null());
  EXPECT_TRUE(v.find("e")->is_object());
  EXPECT_TRUE(v.find("f")->as_array().empty());
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonReader, ReadsWhatTheWriterWrites) {
  // The round trip the run directory depends on: json_string / json_number in, the same out.
  const std::string text = "{\"name\": " + json_string("tab\there \"quoted\" \x01") +
                           ", \"nan\": " + json_number(0.0 / 0.0) + ", \"x\": " + json_number(0.1) +
                           "}";
  const JsonValue v = parse_json(text, "test");
  EXPECT_EQ(v.string_or("name", ""), "tab\there \"quoted\" \x01");
  EXPECT_TRUE(v.find("nan")->is_null());
  EXPECT_EQ(v.number_or("nan", -1), -1);  // null is "no number"
  EXPECT_EQ(v.number_or("x", -1), 0.1);
  EXPECT_EQ(v.string_or("x", "fallback"), "fallback");
}

// The message of the JsonSyntaxError that parsing `text` raises, and whether it is a truncation.
std::pair<std::string, bool> error_of(std::string_view text) {
  try {
    parse_json(text, "run/metrics.jsonl:7");
  } catch (const JsonSyntaxError& e) {
    return {e.what(), e.truncated()};
  }
  ADD_FAILURE() << "no error for " << text;
  return {};
}

TEST(JsonReader, MalformedInputNamesSourceLineAndColumn) {
  auto [what, truncated] = error_of("{\"a\": 1,\n \"b\": tru}");
  EXPECT_EQ(what, "run/metrics.jsonl:7: line 2, column 7: expected a value, found 't'");
  EXPECT_FALSE(truncated);
  std::tie(what, truncated) = error_of("{\"a\": 1} x");
  EXPECT_EQ(what,
            "run/metrics.jsonl:7: line 1, column 10: expected the end after the value, found 'x'");
  std::tie(what, truncated) = error_of("[1, 2,]");
  EXPECT_NE(what.find("expected a value, found ']'"), std::string::npos) << what;
  std::tie(what, truncated) = error_of("{a: 1}");
  EXPECT_NE(what.find("expected a member name"), std::string::npos) << what;
  std::tie(what, truncated) = error_of("[NaN]");
  EXPECT_NE(what.find("expected a value, found 'N'"), std::string::npos) << what;
  std::tie(what, truncated) = error_of("[01]");
  EXPECT_NE(what.find("expected ',' or ']', found '1'"), std::string::npos) << what;
  std::tie(what, truncated) = error_of("\"a\tb\"");
  EXPECT_NE(what.find("control character 0x09"), std::string::npos) << what;
  std::tie(what, truncated) = error_of("[1e999]");
  EXPECT_NE(what.find("out of range"), std::string::npos) << what;
  EXPECT_FALSE(truncated);
}

TEST(JsonReader, TruncatedInputIsToldApart) {
  // What a killed writer leaves: the line or the file cut anywhere.
  const std::string whole =
      R"({"step": 10, "loss": 0.25, "ok": true, "s": "a\u00e9", "v": [1, 2]})";
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    const auto [what, truncated] = error_of(whole.substr(0, cut));
    EXPECT_TRUE(truncated) << "cut at " << cut << ": " << what;
  }
  EXPECT_NO_THROW(parse_json(whole, "test"));
}

TEST(JsonReader, NestingIsBounded) {
  const std::string deep(100000, '[');
  const auto [what, truncated] = error_of(deep);
  EXPECT_NE(what.find("nesting deeper than"), std::string::npos) << what;
}

TEST(JsonReader, TypeMismatchIsARuntimeError) {
  const JsonValue v = parse_json("[1]", "test");
  EXPECT_THROW(v.as_object(), RuntimeError);
  EXPECT_THROW(v.as_array()[0].as_string(), RuntimeError);
  EXPECT_EQ(v.type_name(), "an array");
}

TEST(JsonReader, ScanStreamsOneMember) {
  const std::string trace = R"({"traceEvents":[{"ph":"X","ts":1.5},{"ph":"i","ts":2}],
    "displayTimeUnit":"ms","otherData":{"dropped_events":0}})";
  std::vector<double> ts;
  const std::size_t n = scan_json_array(trace, "traceEvents", "timeline.json", [&](JsonValue&& e) {
    ts.push_back(e.number_or("ts", -1));
  });
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(ts, (std::vector<double>{1.5, 2}));
  // Chrome's array format: the whole text is the array.
  ts.clear();
  EXPECT_EQ(scan_json_array(R"([{"ts": 3}])", "traceEvents", "t",
                            [&](JsonValue&& e) { ts.push_back(e.number_or("ts", -1)); }),
            1u);
  EXPECT_EQ(ts, std::vector<double>{3});
  // No such member: nothing streamed.
  EXPECT_EQ(scan_json_array(R"({"other": [1]})", "traceEvents", "t", [](JsonValue&&) {}), 0u);
}

TEST(JsonReader, ScanDeliversWhatPrecedesACut) {
  // A per-rank timeline still being written: the elements before the cut arrive, then the
  // truncation error.
  const std::string partial = R"({"traceEvents":[{"ts":1},{"ts":2},{"ts":)";
  std::vector<double> ts;
  try {
    scan_json_array(partial, "traceEvents", "timeline/rank-0.json",
                    [&](JsonValue&& e) { ts.push_back(e.number_or("ts", -1)); });
    ADD_FAILURE() << "no error";
  } catch (const JsonSyntaxError& e) {
    EXPECT_TRUE(e.truncated());
    EXPECT_NE(std::string(e.what()).find("timeline/rank-0.json: line 1"), std::string::npos);
  }
  EXPECT_EQ(ts, (std::vector<double>{1, 2}));
  EXPECT_THROW(scan_json_array(R"({"traceEvents": 5})", "traceEvents", "t", [](JsonValue&&) {}),
               JsonSyntaxError);
}

}  // namespace
}  // namespace conflux
