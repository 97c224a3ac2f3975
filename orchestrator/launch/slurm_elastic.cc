// slurm.elastic's plan-time check and node request (see slurm_elastic.h).
#include "orchestrator/launch/slurm_elastic.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "base/sync_mode.h"

namespace batchlab::orchestrator {
namespace {

// The batch sizes a run trains at: batch_size, then each batch_schedule size.
std::vector<long long> BatchSizes(const nlohmann::json& config) {
  std::vector<long long> sizes = {config.value("batch_size", 1LL)};
  const auto schedule = config.find("batch_schedule");
  if (schedule != config.end() && schedule->is_object() && schedule->contains("batch_sizes")) {
    for (const auto& b : (*schedule)["batch_sizes"]) {
      if (b.is_number_integer()) sizes.push_back(b.get<long long>());
    }
  }
  return sizes;
}

std::string SyncOf(const nlohmann::json& config) {
  const auto comm = config.find("comm");
  if (comm == config.end() || !comm->is_object()) return "allreduce";
  return comm->value("sync", std::string("allreduce"));
}

}  // namespace

Status CheckElastic(const SlurmSettings& slurm, const Plan& plan) {
  if (!slurm.elastic) return OkStatus();
  const int min_nodes = slurm.elastic->min_nodes;
  for (const PlannedRun& r : plan.runs) {
    const int nodes = r.config.value("nodes", 1);
    if (min_nodes > nodes) {
      return InvalidArgumentError(fmt::format(
          "slurm.elastic.min_nodes: {} is above run {}'s nodes = {}: an attempt never runs on "
          "more nodes than its run asks for; set min_nodes to 1 .. {} (the smallest `nodes` of "
          "the sweep)",
          min_nodes, r.id, nodes, nodes));
    }
    if (!r.program.builtin) {
      return InvalidArgumentError(fmt::format(
          "slurm.elastic: run {} is a user program; the Python client re-shards its checkpoints "
          "but does not yet take its rank count from the ranks Slurm started; remove "
          "slurm.elastic, or run the built-in runner",
          r.id));
    }
    const std::string sync = SyncOf(r.config);
    // What the table says of the mode (base/sync_mode.h: re-shardable).
    if (const SyncModeInfo* mode = FindSyncMode(sync);
        mode != nullptr && mode->reshard == Reshard::kNever) {
      return InvalidArgumentError(fmt::format(
          "slurm.elastic: run {} has comm.sync \"{}\", which keeps a different state on every "
          "rank that cannot be re-sharded onto fewer nodes; remove slurm.elastic, or use "
          "comm.sync \"allreduce\", \"lag\" or \"local_sgd\"",
          r.id, sync));
    }
    const long long per_node = r.config.value("ranks_per_node", 1LL);
    const long long accumulation = r.config.value("accumulation", 1LL);
    for (int k = min_nodes; k < nodes; ++k) {
      const long long unit = k * per_node * accumulation;
      for (long long b : BatchSizes(r.config)) {
        if (b % unit == 0) continue;
        return InvalidArgumentError(fmt::format(
            "slurm.elastic.min_nodes: run {}'s batch size {} is not divisible by world_size x "
            "accumulation = {} x {} at {} node(s) ({} rank(s) per node), so it cannot go on "
            "there; raise min_nodes above {}, or choose a batch size divisible at every node "
            "count from min_nodes to {}",
            r.id, b, k * per_node, accumulation, k, per_node, k, nodes));
      }
    }
  }
  return OkStatus();
}

std::pair<int, int> ElasticNodeRange(const SlurmSettings& slurm, int nodes) {
  if (!slurm.elastic) return {nodes, nodes};
  return {std::min(slurm.elastic->min_nodes, nodes), nodes};
}

std::optional<int> ElasticNodeCount(std::pair<int, int> range, int idle) {
  if (idle >= range.second) return std::nullopt;
  return std::max(range.first, idle);
}

std::optional<int> ParseIdleNodes(const std::string& sinfo) {
  std::istringstream lines(sinfo);
  std::string line;
  std::optional<int> total;
  while (std::getline(lines, line)) {
    try {
      size_t used = 0;
      const int n = std::stoi(line, &used);
      if (n < 0 || line.find_first_not_of(" \t\r", used) != std::string::npos) continue;
      total = total.value_or(0) + n;
    } catch (const std::exception&) {
    }
  }
  return total;
}

}  // namespace batchlab::orchestrator
