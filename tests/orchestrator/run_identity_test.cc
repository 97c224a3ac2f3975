// Run ids: stable across key order and whitespace, sensitive to every config value, blind to the
// per-attempt fields.
#include "orchestrator/run_identity.h"

#include <gtest/gtest.h>

#include "orchestrator/expansion.h"
#include "orchestrator/spec.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;

TEST(RunIdentityTest, Fnv1aKnownVectors) {
  // Reference values of 64-bit FNV-1a.
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Hex16(0xaf63dc4c8601ec8cULL), "af63dc4c8601ec8c");
  EXPECT_EQ(Hex16(1), "0000000000000001");
}

TEST(RunIdentityTest, StableAcrossKeyOrderAndWhitespace) {
  json a = json::parse(R"({"batch_size": 64, "lr": {"base": 0.1, "rule": "linear"}, "seed": 1})");
  json b = json::parse(
      "{ \"seed\" :1,\n\t\"lr\": {\"rule\":\"linear\", \"base\":0.1},"
      " \"batch_size\":64 }");
  EXPECT_EQ(RunIdOf(a), RunIdOf(b));
  EXPECT_EQ(CanonicalJson(a), R"({"batch_size":64,"lr":{"base":0.1,"rule":"linear"},"seed":1})");
  nlohmann::ordered_json o = nlohmann::ordered_json::parse(R"({"z": 1, "a": 2})");
  EXPECT_EQ(CanonicalJson(json::parse(o.dump())), R"({"a":2,"z":1})");
}

TEST(RunIdentityTest, IgnoresPerAttemptFieldsOnly) {
  json a = json::parse(R"({"batch_size": 64, "seed": 1})");
  json b = a;
  b["attempt"] = 3;
  b["metrics_path"] = "/x/metrics.jsonl";
  b["run_id"] = "ffffffffffffffff";
  EXPECT_EQ(RunIdOf(a), RunIdOf(b));
  json c = a;
  c["seed"] = 2;
  EXPECT_NE(RunIdOf(a), RunIdOf(c));
  json d = a;
  d["batch_size"] = 64.0;  // documented: 64 and 64.0 are different configs
  EXPECT_NE(RunIdOf(a), RunIdOf(d));
}

TEST(RunIdentityTest, SameSpecWrittenDifferentlyGivesTheSameRunIds) {
  auto s1 = ParseSpec(R"({"name": "q", "axes": {"batch_size": [64, 128], "lr.rule": ["none"]},
                          "base": {"lr": {"base": 0.1, "base_batch_size": 64}}})",
                      "a");
  auto s2 = ParseSpec(R"({"base": {"lr": {"base_batch_size": 64, "base": 0.1}}, "name": "q",
                          "axes": {"batch_size": [64, 128], "lr.rule": ["none"]}})",
                      "b");
  ASSERT_TRUE(s1.ok() && s2.ok());
  auto p1 = ExpandSpec(*s1, {});
  auto p2 = ExpandSpec(*s2, {});
  ASSERT_TRUE(p1.ok() && p2.ok());
  ASSERT_EQ(p1->runs.size(), p2->runs.size());
  for (size_t i = 0; i < p1->runs.size(); ++i) EXPECT_EQ(p1->runs[i].id, p2->runs[i].id);
  // The id is the hash of the config the runner receives, minus the per-attempt fields.
  EXPECT_EQ(p1->runs[0].id, RunIdOf(p1->runs[0].config));
}

}  // namespace
}  // namespace batchlab::orchestrator
