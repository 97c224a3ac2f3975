// RunTable, its stages and PlannedRecord (see run_table.h).
#include "orchestrator/execute/run_table.h"

#include <utility>

#include <fmt/format.h>

namespace batchlab::orchestrator {

const char* RunStageName(RunStage stage) {
  switch (stage) {
    case RunStage::kPlanned:
      return "planned";
    case RunStage::kHeld:
      return "held";
    case RunStage::kQueued:
      return "queued";
    case RunStage::kRunning:
      return "running";
    case RunStage::kDone:
      return "done";
    case RunStage::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

bool IsAllowedTransition(RunStage from, RunStage to) {
  using S = RunStage;
  switch (from) {
    case S::kPlanned:
      return to == S::kDone || to == S::kHeld || to == S::kQueued;
    case S::kHeld:
      return to == S::kQueued || to == S::kDone;
    case S::kQueued:
      return to == S::kRunning || to == S::kQueued || to == S::kDone;
    case S::kRunning:
      return to == S::kDone || to == S::kQueued || to == S::kCancelled;
    case S::kDone:
    case S::kCancelled:
      return false;  // final in this call
  }
  return false;
}

size_t RunTable::Add(const std::string& id, const std::optional<std::string>& search_group) {
  const size_t i = slots_.size();
  RunSlot slot;
  if (search_group) {
    slot.search_group = *search_group;
    search_groups_[*search_group].push_back(i);
  }
  slots_.push_back(std::move(slot));
  ids_.push_back(id);
  index_of_[id] = i;
  return i;
}

std::optional<size_t> RunTable::IndexOf(const std::string& id) const {
  const auto it = index_of_.find(id);
  if (it == index_of_.end()) return std::nullopt;
  return it->second;
}

Status RunTable::Transition(size_t i, RunStage to) {
  if (to == RunStage::kRunning) {
    // A running run has its attempt in flight: the two change together.
    return InternalError("run table: a run starts running only with its attempt (Start)");
  }
  return Move(i, to);
}

Status RunTable::Move(size_t i, RunStage to) {
  if (i >= slots_.size()) {
    return InternalError(fmt::format("run table: no run {} (the table has {})", i, slots_.size()));
  }
  const RunStage from = slots_[i].stage;
  if (!IsAllowedTransition(from, to)) {
    return InternalError(
        fmt::format("run {}: the executor moved it from {} to {}, which no rule "
                    "allows (run_table.h)",
                    ids_[i], RunStageName(from), RunStageName(to)));
  }
  if (from == RunStage::kHeld) --held_;
  if (to == RunStage::kHeld) ++held_;
  slots_[i].stage = to;
  return OkStatus();
}

Status RunTable::Start(InFlight attempt) {
  BATCHLAB_RETURN_IF_ERROR(Move(attempt.index, RunStage::kRunning));
  in_flight_.push_back(std::move(attempt));
  return OkStatus();
}

InFlight RunTable::EndAttempt(size_t k) {
  InFlight ended = std::move(in_flight_[k]);
  in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(k));
  return ended;
}

std::vector<size_t> RunTable::Held() const {
  std::vector<size_t> held;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].stage == RunStage::kHeld) held.push_back(i);
  }
  return held;
}

const std::vector<size_t>& RunTable::SearchGroupRuns(const std::string& group) const {
  static const std::vector<size_t> kNone;
  const auto it = search_groups_.find(group);
  return it == search_groups_.end() ? kNone : it->second;
}

int RunTable::SearchRounds(const std::string& group) const {
  const auto it = search_rounds_.find(group);
  return it == search_rounds_.end() ? 0 : it->second;
}

results::RunRecord PlannedRecord(const PlannedRun& run, int64_t sweep_id) {
  results::RunRecord rec;
  rec.id = run.id;
  rec.sweep_id = sweep_id;
  rec.ordinal = run.ordinal;
  rec.config_json = run.config.dump();
  rec.params = run.params;
  return rec;
}

}  // namespace batchlab::orchestrator
