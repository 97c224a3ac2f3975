// The sections of a spec, each parsed into the Spec by its own function (spec.cc's ParseDocument
// calls them in order). What is swept (spec_sweep_space.cc): the axes, zipped axes and their
// paths, the LR search's coarse grid, random sampling, constraints, seeds and repeats. Where and
// how runs run (spec_resources.cc): resources, launch settings, Slurm settings. Every error names
// its place in the spec (spec_reader.h).
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_SPEC_SECTIONS_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_SPEC_SECTIONS_H_

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator::spec_parsing {

// The swept paths met so far, each with where in the spec it was swept: (path, where).
using SweptPaths = std::vector<std::pair<std::string, std::string>>;

// Axis paths must be distinct and none may be a prefix object of another ("lr" vs "lr.base").
Status CheckPathsDisjoint(const SweptPaths& paths);

Status ParseAxes(const nlohmann::ordered_json& doc, Spec* spec, SweptPaths* paths);  // axes, zip
// `lr_search` (lr_search.h): validated, and its coarse grid added as one more axis, so the first
// round is ordinary expansion; later rounds are added by the executor as results arrive.
Status ParseLrSearch(const nlohmann::ordered_json& doc, Spec* spec, SweptPaths* paths);
Status ParseRandom(const nlohmann::ordered_json& r, Spec* spec, SweptPaths* paths);
Status ParseConstraints(const nlohmann::ordered_json& c, Spec* spec);
Status ParseSeeds(const nlohmann::ordered_json& doc, Spec* spec);  // seeds, repeats, seed

Status ParseResources(const nlohmann::ordered_json& r, Resources* out);
Status ParseLaunch(const nlohmann::ordered_json& l, LaunchSettings* out);
Status ParseSlurm(const nlohmann::ordered_json& s, SlurmSettings* out);
StatusOr<SlurmElastic> ParseSlurmElastic(const nlohmann::ordered_json& e);  // slurm.elastic

}  // namespace batchlab::orchestrator::spec_parsing

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_SPEC_SECTIONS_H_
