// One metrics line at a time: what ingest keeps of valid lines, and why it rejects the others.
#include "results/metrics_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace batchlab::results {
namespace {

TEST(MetricsLineTest, StepLineKeepsEveryNumericFieldButSeqAndStep) {
  MetricsLineParser parser;
  const MetricsLine& m = parser.Parse(
      R"({"seq":12,"kind":"step","step":11,"samples":704,"loss":2.25,"lr":1e-2,"note":"x",)"
      R"("flag":true,"gone":null,"big":18446744073709551615,"nested":{"inner":1}})");
  ASSERT_TRUE(m.error.empty()) << m.error;
  EXPECT_EQ(m.seq, 12);
  EXPECT_EQ(m.kind, "step");
  ASSERT_TRUE(m.step.has_value());
  EXPECT_EQ(*m.step, 11);
  ASSERT_EQ(m.num_values, 4u);  // samples, loss, lr, big: not strings, bools, nulls, nested
  EXPECT_EQ(m.values[0].first, "samples");
  EXPECT_EQ(m.values[0].second, 704);
  EXPECT_EQ(m.values[1].first, "loss");
  EXPECT_EQ(m.values[1].second, 2.25);
  EXPECT_EQ(m.values[2].second, 0.01);
  EXPECT_EQ(m.values[3].first, "big");
}

TEST(MetricsLineTest, BuffersAreResetBetweenLines) {
  MetricsLineParser parser;
  parser.Parse(R"({"seq":1,"kind":"step","step":1,"a":1,"b":2,"c":3})");
  const MetricsLine& m = parser.Parse(R"({"seq":2,"kind":"eval","test_accuracy":0.5})");
  ASSERT_TRUE(m.error.empty());
  EXPECT_EQ(m.kind, "eval");
  EXPECT_FALSE(m.step.has_value());
  ASSERT_EQ(m.num_values, 1u);
  EXPECT_EQ(m.values[0].first, "test_accuracy");
}

TEST(MetricsLineTest, RejectsWhatIsNotARecord) {
  MetricsLineParser parser;
  struct Case {
    const char* line;
    const char* error;
  };
  for (const Case& c :
       {Case{R"({"seq":1,"kind":"step")", "not valid JSON"},
        Case{R"({"seq":1,"kind":"step"} trailing)", "not valid JSON"},
        Case{R"({"seq":1}{"seq":2})", "not valid JSON"}, Case{"[1,2]", "not a JSON object"},
        Case{"42", "not a JSON object"}, Case{"\"text\"", "not a JSON object"},
        Case{R"({"kind":"step"})", "field `seq` is missing or not an integer"},
        Case{R"({"seq":1.5,"kind":"step"})", "field `seq` is missing or not an integer"},
        Case{R"({"seq":"1","kind":"step"})", "field `seq` is missing or not an integer"},
        Case{R"({"seq":1,"kind":3})", "field `kind` is missing or not a string"},
        Case{R"({"seq":1,"kind":""})", "field `kind` is empty"}}) {
    EXPECT_EQ(parser.Parse(c.line).error, c.error) << c.line;
  }
  EXPECT_TRUE(parser.Parse(R"({"seq":0,"kind":"start","host":"n1"})").error.empty());
}

TEST(MetricsLineTest, BareNonFiniteTokensAreReadAsNonFiniteValues) {
  MetricsLineParser parser;
  const MetricsLine& m = parser.Parse(
      R"({"seq":3,"kind":"step","step":NaN,"loss":NaN,"a":Infinity,"b":-Infinity,"c":-inf,)"
      R"("note":"NaN stays text","d":1})");
  ASSERT_TRUE(m.error.empty()) << m.error;
  EXPECT_TRUE(m.non_finite_tokens);
  EXPECT_EQ(m.seq, 3);
  EXPECT_FALSE(m.step.has_value());  // a NaN step is no step
  ASSERT_EQ(m.num_values, 5u);
  EXPECT_TRUE(std::isnan(m.values[0].second));
  EXPECT_EQ(m.values[1].second, std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.values[2].second, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.values[3].second, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.values[4].first, "d");
  // Valid JSON is not touched; other bare words are still invalid.
  EXPECT_FALSE(parser.Parse(R"({"seq":1,"kind":"step","x":"Infinity"})").non_finite_tokens);
  EXPECT_EQ(parser.Parse(R"({"seq":1,"kind":"step","x":nope})").error, "not valid JSON");
  EXPECT_EQ(parser.Parse(R"({"seq":1,"kind":"step","x":NaN)").error, "not valid JSON");
  EXPECT_EQ(parser.Parse(R"({"seq":1e300,"kind":"step","step":1e300})").error,
            "field `seq` is missing or not an integer");
}

}  // namespace
}  // namespace batchlab::results
