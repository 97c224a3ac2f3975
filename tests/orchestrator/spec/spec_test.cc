// Validation: every error path of the spec parser names its JSON path and what is allowed.
#include "orchestrator/spec/spec.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/support/expect_invalid_spec.h"

namespace batchlab::orchestrator {
namespace {

constexpr const char* kMinimal = R"({"name": "s", "base": {"batch_size": 64}})";

TEST(SpecTest, MinimalSpecParsesWithDefaults) {
  StatusOr<Spec> spec = ParseSpec(kMinimal, "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "s");
  EXPECT_EQ(spec->seeds, std::vector<long long>{1});
  EXPECT_EQ(spec->max_runs, 1000);
  EXPECT_EQ(spec->resources.retries, 1);
  EXPECT_EQ(spec->spec_hash.size(), 16u);
}

TEST(SpecTest, QuickstartShapedSpecParses) {
  StatusOr<Spec> spec = ParseSpec(R"({
    "name": "q", "base": {"optimizer": {"name": "momentum", "momentum": 0.9},
                          "lr": {"base": 0.05, "base_batch_size": 64}, "budget": {"epochs": 1}},
    "axes": {"batch_size": [64, 256], "nodes": [1, 2], "lr.rule": ["none", "linear"]},
    "seeds": [1, 2]})",
                                  "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->axes.size(), 3u);
  EXPECT_EQ(spec->axes[0].columns[0].path, "batch_size");  // written order kept
  EXPECT_EQ(spec->axes[2].columns[0].path, "lr.rule");
}

TEST(SpecTest, BadJsonNamesTheFileAndPosition) {
  ExpectInvalid(R"({"name": "s",, })", {"t.json", "not valid JSON", "line 1"});
}

TEST(SpecTest, TopLevelMustBeObject) { ExpectInvalid("[1, 2]", {"a spec is a JSON object"}); }

TEST(SpecTest, UnknownTopLevelField) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 1}, "axis": {}})",
                {"axis: unknown field", "axes"});
}

TEST(SpecTest, MissingAndBadName) {
  ExpectInvalid(R"({"base": {"batch_size": 1}})", {"name: is missing"});
  ExpectInvalid(R"({"name": 3, "base": {"batch_size": 1}})", {"name: 3 is not a string"});
  ExpectInvalid(R"({"name": "a b", "base": {"batch_size": 1}})", {"name:", "A-Z a-z 0-9"});
}

TEST(SpecTest, UnknownConfigFieldInBase) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 1, "optimizer": {"nme": "sgd"}}})",
                {"base.optimizer.nme: unknown field", "name, momentum"});
}

TEST(SpecTest, WrongTypesInBase) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": "64"}})",
                {"base.batch_size: \"64\" is not a positive integer"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "lr": {"base": "x"}}})",
                {"base.lr.base: \"x\" is not a number"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "lr": {"base": 0}}})",
                {"base.lr.base: 0 is out of range: must be > 0"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "lr": {"rule": "cubic"}}})",
                {"base.lr.rule: \"cubic\" is not one of \"none\", \"linear\", \"sqrt\""});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "model": {"hidden": [128, 0]}}})",
                {"base.model.hidden[1]: 0 is not a positive integer"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "model": "mlp"}})",
                {"base.model: \"mlp\" is not an object"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "model": {"bias": 1}}})",
                {"base.model.bias: 1 is not true or false"});
}

TEST(SpecTest, DerivedFieldsCannotBeSet) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64, "world_size": 2}})",
                {"base.world_size: derived"});
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": [64], "local_batch_size": [8]}})",
                {"axes.local_batch_size", "derived"});
}

TEST(SpecTest, AxisValueErrorsNameTheIndex) {
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": [64, 128, 256, 0]}})",
                {"axes.batch_size[3]: 0 is not a positive integer"});
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": [64], "optimizer.name": ["sgd", "adm"]}})",
                {"axes.optimizer.name[1]: \"adm\" is not one of", "\"adam\""});
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": []}})",
                {"axes.batch_size: [] is not a non-empty array"});
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": [64], "optimizer.foo": [1]}})",
                {"axes.optimizer.foo", "not a config field", "under optimizer"});
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": [64], "threads.x": [1]}})",
                {"\"threads\" is not an object"});
  ExpectInvalid(R"({"name": "s", "axes": 3})", {"axes: is not an object"});
}

TEST(SpecTest, AxisSweptTwice) {
  ExpectInvalid(R"({"name": "s", "axes": {"batch_size": [64], "lr": [{"base": 0.1}]},
                    "zip": [{"lr.base": [0.1]}]})",
                {"zip[0].lr.base", "already swept by axes.lr"});
}

TEST(SpecTest, ZipErrors) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "zip": [{"lr.base": [0.1, 0.2], "nodes": [1]}]})",
                {"zip[0].nodes: has 1 values but lr.base has 2"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "zip": {"a": 1}})",
                {"zip: is not an array"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "zip": [{}]})",
                {"zip[0]: is not a non-empty object"});
}

TEST(SpecTest, RandomErrors) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"params": {"lr.base": {"uniform": [0.1, 1]}}}})",
                {"random.count: is missing"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 2, "params": {"lr.base": {"normal": [0, 1]}}}})",
                {"random.params.lr.base.normal: unknown distribution"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 2, "params": {"lr.base": {"log_uniform": [0, 1]}}}})",
                {"random.params.lr.base.log_uniform: low must be > 0"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 2, "params": {"lr.base": {"uniform": [1, 0.5]}}}})",
                {"low must not exceed high"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 2, "params": {"optimizer.momentum": {"uniform": [0.5, 1.5]}}}})",
                {"random.params.optimizer.momentum.uniform[1]: 1.5 is out of range"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "random": {"count": 0, "params": {"lr.base": {"uniform": [0.1, 1]}}}})",
                {"random.count: 0 is not a positive integer"});
}

TEST(SpecTest, ConstraintErrors) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "constraints": [{"field": "local_batch_size", "op": "=>", "value": 8}]})",
                {"constraints[0].op: \"=>\" is not one of"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "constraints": [{"field": "batch_size", "op": "<="}]})",
                {"constraints[0]: needs exactly one of"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "constraints": [{"op": "<=", "value": 1}]})",
                {"constraints[0].field: is missing"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64},
                    "constraints": [{"field": "batch_size", "op": "<=", "value": 1, "x": 1}]})",
                {"constraints[0].x: unknown field"});
}

TEST(SpecTest, SeedsAndRepeats) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "seeds": [1, 1]})",
                {"seeds[1]: repeats a seed"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "seeds": [1], "repeats": 2})",
                {"repeats: give either"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "repeats": 0})",
                {"repeats: 0 is not a positive integer"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "seeds": [-1]})",
                {"seeds[0]: -1 is not a non-negative integer"});
  StatusOr<Spec> spec =
      ParseSpec(R"({"name": "s", "base": {"batch_size": 64}, "repeats": 3, "seed": 10})", "t");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->seeds, (std::vector<long long>{10, 11, 12}));
}

TEST(SpecTest, ResourcesLaunchSlurmErrors) {
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "resources": {"retries": -1}})",
                {"resources.retries: -1 is not a non-negative integer"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "resources": {"timeout": 5}})",
                {"resources.timeout: unknown field", "timeout_seconds"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "launch": {"env": {"A": 1}}})",
                {"launch.env.A: 1 is not a string"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "slurm": {"time_limit_minutes": 0}})",
                {"slurm.time_limit_minutes: 0 is not a positive integer"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "max_runs": 0})",
                {"max_runs: 0 is not a positive integer"});
}

TEST(SpecTest, BatchSizeRequired) {
  ExpectInvalid(R"({"name": "s", "axes": {"nodes": [1, 2]}})", {"base.batch_size: is missing"});
}

TEST(SpecTest, HashIgnoresFormattingButNotContent) {
  auto a = ParseSpec(R"({"name": "s", "base": {"batch_size": 64, "threads": 1}})", "a");
  auto b =
      ParseSpec("{\n  \"base\" : { \"threads\":1, \"batch_size\" : 64 },\n \"name\":\"s\"}", "b");
  auto c = ParseSpec(R"({"name": "s", "base": {"batch_size": 128, "threads": 1}})", "c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->spec_hash, b->spec_hash);
  EXPECT_NE(a->spec_hash, c->spec_hash);
}

TEST(SpecTest, MissingFileIsNotFound) {
  StatusOr<Spec> spec = LoadSpecFile("/nonexistent/spec.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
}

// The stall rule's default (issue 33): on where the chance level is known, off with the reason
// elsewhere, and off when the spec says false.
TEST(SpecTest, StallRuleOnByDefaultWhereTheChanceLevelIsKnown) {
  auto parse = [](const std::string& base, const std::string& extra = "") {
    return ParseSpec(R"({"name": "s", "base": {"batch_size": 64, )" + base + "}" + extra + "}",
                     "t.json");
  };
  StatusOr<Spec> acc = parse(R"("target": {"metric": "test_accuracy", "op": ">=", "value": 0.8})");
  ASSERT_TRUE(acc.ok()) << acc.status().message();
  ASSERT_TRUE(acc->stall.has_value());
  EXPECT_EQ(acc->stall->evals, kDefaultStallEvals);
  EXPECT_DOUBLE_EQ(acc->stall->chance, 0.1);
  StatusOr<Spec> loss = parse(R"("target": {"metric": "test_loss", "op": "<=", "value": 0.5})");
  ASSERT_TRUE(loss.ok() && loss->stall.has_value());
  EXPECT_DOUBLE_EQ(loss->stall->chance, std::log(10.0));
  // A user program, another data set, a metric without a chance level, no target: off.
  struct Off {
    const char* base;
    const char* says;
  };
  for (const Off& c :
       {Off{R"("program": {"command": ["/bin/true"]}, "target": {"metric": "test_accuracy", )"
            R"("op": ">=", "value": 0.8})",
            "the chance level of a user program's test_accuracy is not known"},
        Off{R"("data": {"name": "csv"}, "target": {"metric": "test_accuracy", "op": ">=", )"
            R"("value": 0.8})",
            "the chance level of data set csv is not known"},
        Off{R"("target": {"metric": "loss", "op": "<=", "value": 0.5})",
            "no chance level for a loss <= target"},
        Off{R"("budget": {"steps": 10})", ""}}) {
    StatusOr<Spec> s = parse(c.base);
    ASSERT_TRUE(s.ok()) << c.base << ": " << s.status().message();
    EXPECT_FALSE(s->stall.has_value()) << c.base;
    EXPECT_NE(s->stall_note.find(c.says), std::string::npos) << s->stall_note;
    if (*c.says == '\0') {
      EXPECT_EQ(s->stall_note, "") << "no target, nothing to say";
    }
  }
  StatusOr<Spec> off = parse(R"("target": {"metric": "test_accuracy", "op": ">=", "value": 0.8})",
                             R"(, "stall": false)");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->stall.has_value());
}

}  // namespace
}  // namespace batchlab::orchestrator
