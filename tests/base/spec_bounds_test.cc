// Hostile numbers and JSON shapes in a spec: every integer is bounded (docs/spec.md, "Bounds"),
// nothing wraps, overflows or divides by zero, duplicate keys and deep nesting are refused, and
// every refusal names the JSON path.
#include <string>

#include <gtest/gtest.h>

#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/json_guard.h"
#include "orchestrator/spec/spec.h"
#include "base/spec_bounds.h"

namespace batchlab::orchestrator {
namespace {

// Parses and expands `text`; the first error, or OK.
Status Outcome(const std::string& text) {
  StatusOr<Spec> spec = ParseSpec(text, "t.json");
  if (!spec.ok()) return spec.status();
  return ExpandSpec(*spec, {}).status();
}

void ExpectRefused(const std::string& text, const std::string& needle) {
  Status s = Outcome(text);
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << needle;
}

std::string WithBase(const std::string& base_fields) {
  return R"({"name": "s", "base": {"batch_size": 64, )" + base_fields + "}}";
}

TEST(SpecBoundsTest, DuplicateKeysAreRefusedAtEveryDepthWithTheirPath) {
  ExpectRefused(R"({"name": "s", "name": "t", "base": {"batch_size": 64}})",
                "t.json: name: duplicate key");
  ExpectRefused(WithBase(R"("lr": {"base": 0.1, "base": 10})"), "base.lr.base: duplicate key");
  ExpectRefused(R"({"name": "s", "zip": [{"batch_size": [64]}, {"nodes": [1], "nodes": [2]}]})",
                "zip[1].nodes: duplicate key");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "launch": {"env": {"A b": "1",
                  "A b": "2"}}})",
                "launch.env[\"A b\"]: duplicate key");
  // Equal keys in different objects are fine.
  EXPECT_TRUE(Outcome(WithBase(R"("lr": {"base": 0.1}, "optimizer": {"name": "sgd"})")).ok());
}

TEST(SpecBoundsTest, DeepNestingIsRefusedWithoutRecursingIntoIt) {
  std::string deep = R"({"name": "s", "base": {"batch_size": 64}, "description": )" +
                     std::string(100000, '[') + std::string(100000, ']') + "}";
  ExpectRefused(deep, "description[0][0]");
  ExpectRefused(deep, "nests deeper than 64 levels");
}

TEST(SpecBoundsTest, NumbersBeyondDoubleAreBadJsonNotACrash) {
  ExpectRefused(WithBase(R"("lr": {"base": 1e999})"), "not valid JSON");
  ExpectRefused(WithBase(R"("lr": {"base": -1e999})"), "not valid JSON");
}

TEST(SpecBoundsTest, IntegersBeyondInt64NeverWrap) {
  // 2^64 - 1 used to wrap to -1, which data.label_column accepts.
  ExpectRefused(WithBase(R"("data": {"name": "csv", "label_column": 18446744073709551615})"),
                "base.data.label_column: 18446744073709551615 is out of range");
  ExpectRefused(WithBase(R"("eval": {"every_steps": 9007199254740992})"),
                "base.eval.every_steps: 9007199254740992 is out of range: must be >= 0 and <= "
                "9007199254740991");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "seeds": [18446744073709551615]})",
                "seeds[0]: 18446744073709551615 is too large: at most 9007199254740991");
  EXPECT_TRUE(Outcome(WithBase(R"("eval": {"every_steps": 9007199254740991})")).ok());
}

TEST(SpecBoundsTest, NodeAndRankCountsAreBoundedAndTheirProductNeverOverflows) {
  // nodes x ranks_per_node = 2^64 made world_size 0 and the divisibility check died of SIGFPE.
  ExpectRefused(WithBase(R"("nodes": 4294967296, "ranks_per_node": 4294967296)"),
                "base.nodes: 4294967296 is out of range: must be >= 1 and <= 65536");
  ExpectRefused(WithBase(R"("ranks_per_node": 4097)"), "base.ranks_per_node: 4097 is out of range");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 1048576, "ranks_per_node": 4096},
                    "axes": {"nodes": [256, 257]}})",
                "axes.nodes[1]: world_size = nodes x ranks_per_node = 257 x 4096 is more than "
                "1048576");
  ExpectRefused(WithBase(R"("accumulation": 65537)"), "base.accumulation: 65537 is out of range");
}

TEST(SpecBoundsTest, ThreadsAndSlotsAreBoundedSoSlotsFitAnInt) {
  ExpectRefused(WithBase(R"("threads": 1025)"), "base.threads: 1025 is out of range");
  ExpectRefused(WithBase(R"("threads": 4294967297)"), "base.threads: 4294967297 is out of range");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "resources": {"slots_per_rank": 4294967297}})",
                "resources.slots_per_rank: 4294967297 is too large: at most 1024");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "slurm": {"cpus_per_task": 1025}})",
                "slurm.cpus_per_task: 1025 is too large");
  // The largest job at the largest per-rank slots: 2^20 x 2^10 slots, exactly.
  StatusOr<Spec> spec = ParseSpec(
      R"({"name": "s", "base": {"batch_size": 1048576, "nodes": 256, "ranks_per_node": 4096,
          "threads": 1024, "mode": "noop"}})",
      "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  StatusOr<Plan> plan = ExpandSpec(*spec, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->runs[0].world_size, 1 << 20);
  EXPECT_EQ(plan->runs[0].slots, 1 << 30);
}

TEST(SpecBoundsTest, RepeatsAndRandomCountAreRefusedBeforeAnythingIsAllocated) {
  // repeats 10^12 used to allocate 10^12 seeds (bad_alloc) before the 2,000,000-point check.
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "repeats": 1000000000000})",
                "repeats: 1000000000000 is too large: at most 2000000");
  // random.count >= 2^31 used to be cast to int: ignored or quoted wrapped.
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 2147483648, "params": {"lr.base": {"uniform": [0.1, 1]}}}})",
                "random.count: 2147483648 is too large: at most 2000000");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 4294967297, "params": {"lr.base": {"uniform": [0.1, 1]}}}})",
                "random.count: 4294967297 is too large");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "max_runs": 9223372036854775808})",
                "max_runs: 9223372036854775808 is too large");
  // The cross product is checked as a whole: 2000 x 2000 points.
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "repeats": 2000,
                    "random": {"count": 2000, "params": {"lr.base": {"uniform": [0.1, 1]}}}})",
                "expands to 4000000 points");
}

TEST(SpecBoundsTest, SeedsNeverOverflow) {
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "seed": 9007199254740991,
                    "repeats": 2})",
                "seed: seeds 9007199254740991 .. 9007199254740991 + 2 - 1 go past");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "seed": 9223372036854775807})",
                "seed: 9223372036854775807 is too large");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 1, "seed": 18446744073709551615,
                               "params": {"lr.base": {"uniform": [0.1, 1]}}}})",
                "random.seed: 18446744073709551615 is too large");
  StatusOr<Spec> spec = ParseSpec(
      R"({"name": "s", "base": {"batch_size": 64}, "seed": 9007199254740990, "repeats": 2})", "t");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->seeds.back(), kMaxSpecInteger);
}

TEST(SpecBoundsTest, IntUniformEndsAreBoundedSoDrawsStayInRange) {
  // [0, 2^63 - 1]: hi - lo + 1 overflowed int64 and the draws were garbage.
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 4, "params": {"data.seed":
                               {"int_uniform": [0, 9223372036854775807]}}}})",
                "random.params.data.seed.int_uniform[1]: 9223372036854775807 is out of range");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 4, "params": {"data.seed":
                               {"int_uniform": [0, 18446744073709551615]}}}})",
                "int_uniform[1]: 18446744073709551615 is out of range");
  // A field with no range of its own (a user program's data.*, params.*) still bounds the ends:
  // 2^63 - 1 is not a double, and converting it back overflowed (found by the spec fuzzer).
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64, "mode": "noop"},
                    "random": {"count": 2, "params": {"data.veed":
                               {"int_uniform": [0, 9223372036854775807]}}}})",
                "random.params.data.veed.int_uniform: int_uniform ends must lie within "
                "+-9007199254740991");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64, "mode": "noop"},
                    "random": {"count": 2, "params": {"data.veed":
                               {"int_uniform": [-9223372036854775808, 0]}}}})",
                "int_uniform ends must lie within");
  // The widest allowed range draws values inside it.
  StatusOr<Spec> spec = ParseSpec(R"({"name": "s", "base": {"batch_size": 64, "mode": "noop"},
      "random": {"count": 50, "seed": 3, "params": {"data.seed":
                 {"int_uniform": [0, 9007199254740991]}}}})",
                                  "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  StatusOr<Plan> plan = ExpandSpec(*spec, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->runs.size(), 50u);
  for (const PlannedRun& r : plan->runs) {
    const long long v = r.config["data"]["seed"].get<long long>();
    EXPECT_GE(v, 0);
    EXPECT_LE(v, kMaxSpecInteger);
  }
}

TEST(SpecBoundsTest, SecondsAndRetriesAreBounded) {
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64}, "resources": {"retries": 101}})",
                "resources.retries: 101 is too large: at most 100");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "resources": {"retry_backoff_seconds": 1e300}})",
                "resources.retry_backoff_seconds: 1e+300 is too large: at most 1000000000");
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "slurm": {"time_limit_minutes": 2147483648}})",
                "slurm.time_limit_minutes: 2147483648 is too large: at most 525600");
  ExpectRefused(WithBase(R"("comm": {"timeout_seconds": 4294967297})"),
                "base.comm.timeout_seconds: 4294967297 is out of range");
  ExpectRefused(WithBase(R"("budget": {"epochs": 1e300})"),
                "base.budget.epochs: 1e+300 is out of range");
}

TEST(SpecBoundsTest, AnEmptyBudgetInAnyAxisPositionIsRefused) {
  ExpectRefused(R"({"name": "s", "base": {"batch_size": 64},
                    "axes": {"budget": [{"steps": 10}, {}]}})",
                "axes.budget[1]: the budget is empty");
  ExpectRefused(WithBase(R"("budget": {})"), "base.budget: the budget is empty");
  EXPECT_TRUE(Outcome(WithBase(R"("budget": {}, "mode": "noop")")).ok());
}

TEST(SpecBoundsTest, OversizedSpecTextIsRefused) {
  std::string big = R"({"name": "s", "base": {"batch_size": 64}, "description": ")" +
                    std::string(kMaxSpecBytes, 'x') + "\"}";
  ExpectRefused(big, "more than the 16777216 a spec may have");
}

}  // namespace
}  // namespace batchlab::orchestrator
