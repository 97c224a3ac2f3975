// The sweep opened or resumed in the database, and each run taken up where the database left it
// (see execution.h).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/run_protocol.h"
#include "orchestrator/execute/execution.h"
#include "orchestrator/spec/spec_extension.h"

namespace batchlab::orchestrator::execution {
namespace {

using results::RunState;

}  // namespace

StatusOr<results::SweepRecord> OpenSweep(results::Store& store, const Spec& spec, bool new_version,
                                         bool* created, std::string* extended) {
  BATCHLAB_ASSIGN_OR_RETURN(auto latest, store.LatestSweep(spec.name));
  *created = false;
  if (latest && latest->spec_hash == spec.spec_hash) return *latest;
  if (latest && !new_version) {
    // More seeds or axis values extend the same study (spec_extension.h); anything else is a
    // new version.
    const SpecChange change =
        CompareSpecs(nlohmann::json::parse(latest->spec_json, nullptr, false), spec.canonical);
    if (change.kind != SpecChange::kChanged) {
      BATCHLAB_RETURN_IF_ERROR(
          store.UpdateSweepSpec(latest->id, spec.canonical.dump(), spec.spec_hash));
      *extended = change.detail;
      latest->spec_hash = spec.spec_hash;
      return *latest;
    }
    return FailedPreconditionError(fmt::format(
        "sweep \"{}\" version {} was run with a different spec ({}); adding seeds or axis values "
        "extends a study, any other change needs a new version: pass --new-version to record "
        "this spec as version {}, or give the sweep another name",
        spec.name, latest->version, change.detail, latest->version + 1));
  }
  *created = true;
  return store.CreateSweep(spec.name, spec.canonical.dump(), spec.spec_hash);
}

// Records runs `added` of the plan in the database (a run it already holds is kept as it is)
// and takes each up where the database left it (TakeUp): the whole plan at the start, each new
// round of the LR search later (on resume, rounds the database already holds).
Status Execution::AddRuns(const std::vector<size_t>& added) {
  for (size_t i : added) {
    BATCHLAB_RETURN_IF_ERROR(store_.AddRun(PlannedRecord(plan_.runs[i], out_.sweep_id)));
  }
  BATCHLAB_ASSIGN_OR_RETURN(auto existing, store_.RunsOfSweep(out_.sweep_id));
  std::map<std::string, const results::RunRecord*> by_id;
  for (const auto& rec : existing) by_id[rec.id] = &rec;
  for (size_t i : added) {
    auto it = by_id.find(plan_.runs[i].id);
    BATCHLAB_RETURN_IF_ERROR(TakeUp(i, it == by_id.end() ? nullptr : it->second));
  }
  return OkStatus();
}

// The resume logic, in one place: run i (kPlanned) as the database has it (`rec`; nullptr when
// its config is a run of an earlier version of the sweep) becomes kDone (finished before, or
// recovered from its end line, or a run of an earlier version), kHeld (a branch) or kQueued
// (never ran, or interrupted).
Status Execution::TakeUp(size_t i, const results::RunRecord* rec) {
  const PlannedRun& r = plan_.runs[i];
  if (rec == nullptr) return TakeUpEarlierVersions(i);

  table_.SetAttempt(i, rec->attempt);
  if (results::IsFinished(rec->state)) {
    BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
    BATCHLAB_RETURN_IF_ERROR(UpdatePrune(i, Phase::kFinished));
    ++out_.skipped;
    return OkStatus();
  }
  if (rec->state == RunState::kRunning) {
    // Left running by an orchestrator that died: stop what is left of it (found through the
    // folder recorded in the database, whatever --runs-dir is now), ingest the rest of its
    // metrics under its own attempt, and start over in a new attempt unless it had ended.
    BATCHLAB_ASSIGN_OR_RETURN(std::optional<std::string> recorded,
                              store_.AttemptDir(r.id, rec->attempt));
    const std::string dir =
        recorded ? *recorded : protocol::AttemptDir(runs_dir_, spec_.name, r.id, rec->attempt, "");
    launcher_.CleanUpStale(dir);
    BATCHLAB_ASSIGN_OR_RETURN(
        results::IngestStats tail,
        store_.IngestMetrics(r.id, rec->attempt, protocol::MetricsPath(dir),
                             results::IngestPass::kFinal));
    if (std::optional<RunState> ended = results::FinalStateOfOutcomeName(tail.end_outcome)) {
      // The runner finished on its own terms before anyone recorded it: keep that result.
      BATCHLAB_RETURN_IF_ERROR(store_.Transition(
          r.id, *ended,
          {std::nullopt, "recovered from the end line after the orchestrator stopped"}));
      BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
      BATCHLAB_RETURN_IF_ERROR(UpdatePrune(i, Phase::kFinished));
      ++out_.skipped;
      Event(fmt::format("run {} had finished ({}) while no orchestrator watched; kept", r.id,
                        results::RunStateName(*ended)));
      return OkStatus();
    }
    BATCHLAB_RETURN_IF_ERROR(store_.Transition(
        r.id, RunState::kCancelled,
        {std::nullopt, "interrupted: the orchestrator stopped while this attempt ran"}));
    ++out_.interrupted;
    Event(fmt::format("run {} was interrupted in attempt {}; it runs again", r.id, rec->attempt));
  }
  if (!r.trunk_id.empty()) {
    // A branch: queued once its trunk's checkpoint exists (ReleaseBranches).
    return table_.Transition(i, RunStage::kHeld);
  }
  return Enqueue(i, 0);
}

// Run i's config is already a run of an earlier version of this sweep, which keeps it (one row
// per run id): this version does not run it, and counts it as finished only if it finished there.
Status Execution::TakeUpEarlierVersions(size_t i) {
  const PlannedRun& r = plan_.runs[i];
  BATCHLAB_ASSIGN_OR_RETURN(std::optional<results::RunRecord> earlier, store_.FindRun(r.id));
  if (!earlier) return InternalError(fmt::format("run {} is in no version of the sweep", r.id));
  BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
  const std::string what = fmt::format("run {} ({}) belongs to an earlier version of the sweep",
                                       r.id, ParamsText(r.params, " "));
  if (results::IsFinished(earlier->state)) {
    ++out_.skipped;
    Event(fmt::format("{}, where it finished ({}); not re-run", what,
                      results::RunStateName(earlier->state)));
    return OkStatus();
  }
  ++out_.earlier_unfinished;
  Event(fmt::format("{}, where it has not finished ({}); not run by this version: finish it by "
                    "re-running that version's spec, or give this sweep another name",
                    what, results::RunStateName(earlier->state)));
  return OkStatus();
}

}  // namespace batchlab::orchestrator::execution
