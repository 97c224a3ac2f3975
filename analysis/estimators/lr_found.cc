// The LR the search found per batch size (see lr_found.h).
#include "analysis/estimators/lr_found.h"

#include <cstdlib>
#include <map>

namespace batchlab::analysis {

std::vector<LrFound> LrFoundPerGroup(const std::vector<RunData>& runs,
                                     const std::vector<TargetHit>& hits, const std::string& path) {
  struct Tried {
    int seeds = 0, reached = 0;
    double steps = 0;
  };
  // (batch size, other values) -> LR -> its seeds
  std::map<std::pair<int64_t, std::string>, std::map<double, Tried>> groups;
  std::map<std::pair<int64_t, std::string>, int> run_count;
  for (size_t i = 0; i < runs.size() && i < hits.size(); ++i) {
    const auto it = runs[i].params.find(path);
    if (it == runs[i].params.end()) continue;
    const std::pair<int64_t, std::string> key{runs[i].batch_size,
                                              ConfigKey(runs[i], {"batch_size", "seed", path})};
    Tried& t = groups[key][std::strtod(it->second.c_str(), nullptr)];
    ++t.seeds;
    ++run_count[key];
    if (hits[i].status == HitStatus::kReached) {
      ++t.reached;
      t.steps += static_cast<double>(hits[i].step);
    }
  }
  std::vector<LrFound> out;
  for (const auto& [key, lrs] : groups) {
    LrFound f;
    f.batch_size = key.first;
    f.others = key.second;
    f.runs = run_count[key];
    f.lrs = static_cast<int>(lrs.size());
    for (const auto& [lr, t] : lrs) {  // increasing LR: a tie keeps the smaller one
      if (t.reached < t.seeds) continue;
      const double mean = t.steps / t.seeds;
      if (!f.lr || mean < f.best_steps) {
        f.lr = lr;
        f.best_steps = mean;
      }
    }
    f.at_edge = f.lr && (*f.lr == lrs.begin()->first || *f.lr == lrs.rbegin()->first);
    out.push_back(f);
  }
  return out;
}

}  // namespace batchlab::analysis
