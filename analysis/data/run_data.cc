// Identity helpers for RunData (see run_data.h).
#include "analysis/data/run_data.h"

#include <fmt/core.h>

namespace batchlab::analysis {

namespace {

bool Dropped(const std::string& name, const std::vector<std::string>& drop) {
  for (const std::string& d : drop) {
    if (d.empty()) continue;
    if (d.back() == '.' ? name.rfind(d, 0) == 0 : name == d) return true;
  }
  return false;
}

}  // namespace

std::string ConfigKey(const RunData& run, const std::vector<std::string>& drop) {
  std::string key;
  for (const auto& [name, value] : run.params) {
    if (Dropped(name, drop)) continue;
    if (!key.empty()) key += ',';
    key += name;
    key += '=';
    key += value;
  }
  return key;
}

namespace {

// " name=value" for each swept value not dropped (string values without their quotes).
std::string SweptValues(const RunData& run, const std::vector<std::string>& drop) {
  std::string out;
  for (const auto& [name, value] : run.params) {
    if (Dropped(name, drop)) continue;
    std::string v = value;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    out += fmt::format(" {}={}", name, v);
  }
  return out;
}

}  // namespace

std::string RunLabel(const RunData& run) {
  std::string label = fmt::format("B={} K={}", run.batch_size, run.world_size);
  if (!run.lr_rule.empty()) label += fmt::format(" rule={}", run.lr_rule);
  if (!run.optimizer.empty()) label += fmt::format(" opt={}", run.optimizer);
  // Every other swept value, so runs that differ only there are told apart.
  return label + SweptValues(run, {"batch_size", "nodes", "world_size", "seed", "lr.rule",
                                   "optimizer.name"});
}

std::string SweptDetail(const RunData& run) {
  const std::string values = SweptValues(run, {"batch_size", "nodes", "world_size", "seed"});
  return values.empty() ? values : values.substr(1);
}

}  // namespace batchlab::analysis
