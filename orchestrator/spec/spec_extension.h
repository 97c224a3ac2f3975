// Whether a changed spec extends the study it was run as, or changes it.
//
// A study grows by adding seeds or axis values: the runs already made stay valid and the new
// runs join the same sweep version (analysis and report then cover all of them). Anything that
// changes what an existing run would be (base, constraints, random draws, an axis removed or a
// value dropped) is a change, which needs a new version (`sweep run --new-version`).
//
// Extension = the specs differ only in
//   seeds (or repeats/seed)  every old seed still present
//   axes.PATH                the same paths; every old value still present
//   zip                      the same groups and paths; every old tuple still present
//   description, max_runs, resources, launch, slurm (how runs are run, not what they are)
//
//   SpecChange c = CompareSpecs(nlohmann::json::parse(stored.spec_json), spec.canonical);
//   if (c.kind == SpecChange::kExtended) fmt::print("{}\n", c.detail);  // "adds seeds [2]"
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_SPEC_EXTENSION_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_SPEC_EXTENSION_H_

#include <string>

#include <nlohmann/json.hpp>

namespace batchlab::orchestrator {

struct SpecChange {
  enum Kind { kSame, kExtended, kChanged };
  Kind kind = kSame;
  // kExtended: what was added ("adds seeds [2, 3]; adds axes.batch_size [4096]");
  // kChanged: the first field that differs ("base.lr.base: 0.05 -> 0.1").
  std::string detail;
};

// `stored` and `now` are canonical specs (Spec::canonical).
SpecChange CompareSpecs(const nlohmann::json& stored, const nlohmann::json& now);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_SPEC_EXTENSION_H_
