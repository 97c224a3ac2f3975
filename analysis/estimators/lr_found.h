// What the adaptive LR search found (docs/spec.md "LR search", orchestrator/spec/lr_search.h): per
// batch size (and every other swept value but the searched path and the seed), the LR with the
// fewest mean steps to target over seeds whose seeds all reached it — the analysis's own rule
// (steps_to_target.h) — and how many runs and LRs the search took to find it.
//
//   for (const LrFound& f : LrFoundPerGroup(sweep.runs, hits, "lr.base"))
//     if (f.lr) fmt::print("B={} lr={} in {} runs\n", f.batch_size, *f.lr, f.runs);
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_LR_FOUND_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_LR_FOUND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/data/run_data.h"
#include "analysis/estimators/steps_to_target.h"

namespace batchlab::analysis {

struct LrFound {
  int64_t batch_size = 0;
  std::string others;        // the other swept values ("" when only B and the LR vary)
  std::optional<double> lr;  // nullopt: no LR reached the target with all seeds
  double best_steps = 0;     // its mean steps to target
  int runs = 0;              // runs the search used at this point (every state)
  int lrs = 0;               // distinct LRs tried
  bool at_edge = false;      // the best is the smallest or largest LR tried
};

// `hits` are FindTargetHits(runs, target), in the same order as `runs`.
std::vector<LrFound> LrFoundPerGroup(const std::vector<RunData>& runs,
                                     const std::vector<TargetHit>& hits, const std::string& path);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_LR_FOUND_H_
