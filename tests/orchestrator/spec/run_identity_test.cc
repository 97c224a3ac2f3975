// Run ids: stable across key order and whitespace, sensitive to every config value, blind to the
// per-attempt fields.
#include "orchestrator/spec/run_identity.h"

#include <gtest/gtest.h>

#include "base/config_fields.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"

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

// A valid value other than the declared default of `f`.
json OtherValue(const config::Field& f) {
  const json& d = *f.default_value;
  switch (f.type) {
    case config::Type::kInt: {
      long long v = d.get<long long>() + 1;
      return v <= f.max ? v : d.get<long long>() - 1;
    }
    case config::Type::kNumber: {
      double v = d.get<double>();
      double other = v == 0 ? 0.5 : v * 0.5;
      if (f.min_exclusive ? other <= f.min : other < f.min) other = v * 1.5;
      return other;
    }
    case config::Type::kString:
      for (const auto& a : f.allowed) {
        if (a != d.get<std::string>()) return a;
      }
      return d.get<std::string>() + "x";
    case config::Type::kBool:
      return !d.get<bool>();
    case config::Type::kIntArray: {
      json v = d;
      v.push_back(static_cast<long long>(f.min) + 7);
      return v;
    }
    case config::Type::kObject:  // budget
      return json{{"steps", 7}};
    case config::Type::kObjectOrNull:  // target, comm.straggler: a minimal valid object
      if (f.path == "comm.straggler") return json{{"rank", 0}, {"delay_ms", 5}};
      return json{{"metric", "loss"}, {"op", "<="}, {"value", 0.5}};
    default:
      return nullptr;
  }
}

std::string OnlyRunId(const json& base) {
  json spec = {{"name", "d"}, {"base", base}};
  auto s = ParseSpec(spec.dump(), "t");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return "";
  auto p = ExpandSpec(*s, {});
  EXPECT_TRUE(p.ok() && p->runs.size() == 1u) << p.status().message();
  return p.ok() && !p->runs.empty() ? p->runs[0].id : "";
}

// Every default is in the resolved config the way an explicit value is: leaving a field out gives
// the id of writing its default, and another value another id. So changing any default in
// base/config_fields.cc changes the run id of every built-in run that leaves the field out.
TEST(RunIdentityTest, ChangingAnyDefaultChangesTheRunId) {
  int checked = 0;
  for (const config::Field* f : config::AllFields()) {
    if (!f->default_value.has_value() || f->reader == config::Reader::kOrchestrator) continue;
    if (f->path.rfind("program.", 0) == 0) continue;  // checked below, with a program
    json base = {{"batch_size", 8}};
    // A field inside an object that is null by default (comm.straggler.probability) has its
    // default only when the object is given: give a minimal one without the field.
    const size_t dot = f->path.rfind('.');
    const std::string parent_path = dot == std::string::npos ? "" : f->path.substr(0, dot);
    if (const config::Field* parent = config::FindField(parent_path);
        !parent_path.empty() && parent != nullptr &&
        parent->type == config::Type::kObjectOrNull) {
      SetPath(base, parent_path, OtherValue(*parent));
    }
    const std::string id_of_defaults = OnlyRunId(base);
    json explicit_default = base, other = base;
    SetPath(explicit_default, f->path, *f->default_value);
    SetPath(other, f->path, OtherValue(*f));
    EXPECT_EQ(OnlyRunId(explicit_default), id_of_defaults) << f->path;
    if (f->path.rfind("checkpoint.", 0) == 0) {
      // When a run saves its state changes nothing it computes (resume is bit for bit): the
      // checkpoint section is the one part of a config outside its id (run_identity.h).
      EXPECT_EQ(OnlyRunId(other), id_of_defaults) << f->path << " = " << OtherValue(*f).dump();
      continue;
    }
    EXPECT_NE(OnlyRunId(other), id_of_defaults) << f->path << " = " << OtherValue(*f).dump();
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// A user program's run gets the defaults of the study's own fields only, so its id does not move
// when a default of the built-in runner (optimizer.beta2, model.*, comm.*) changes.
TEST(RunIdentityTest, UserProgramsGetOnlyTheStudysDefaults) {
  json spec = {{"name", "u"},
               {"base", {{"batch_size", 8}, {"program", {{"command", {"/bin/true"}}}}}}};
  auto s = ParseSpec(spec.dump(), "t");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto p = ExpandSpec(*s, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  const json& c = p->runs.at(0).config;
  for (const config::Field* f : config::AllFields()) {
    if (!f->default_value.has_value() || f->reader == config::Reader::kOrchestrator) continue;
    const json* v = FindPath(c, f->path);
    if (f->reader == config::Reader::kEveryProgram) {
      ASSERT_NE(v, nullptr) << f->path;
      EXPECT_EQ(*v, *f->default_value) << f->path;
    } else {
      EXPECT_EQ(v, nullptr) << f->path;
    }
  }
}

}  // namespace
}  // namespace batchlab::orchestrator
