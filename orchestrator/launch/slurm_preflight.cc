#include "orchestrator/launch/slurm_preflight.h"

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "orchestrator/process/captured_command.h"

namespace batchlab::orchestrator {
namespace {

std::string SourceOf(const PlannedRun& r, const std::string& path) {
  auto it = r.sources.find(path);
  return it == r.sources.end() ? "base." + path : it->second;
}

}  // namespace

StatusOr<PartitionCapacity> ParseSinfoNodes(const std::string& text,
                                            const std::string& partition) {
  PartitionCapacity cap;
  std::set<std::string> nodes, partitions;
  std::string default_partition;
  std::istringstream lines(text);
  std::string line;
  struct Row {
    std::string node, partition;
    int cpus;
  };
  std::vector<Row> rows;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    Row row;
    std::string cpus;
    if (!std::getline(fields, row.node, '|') || !std::getline(fields, row.partition, '|') ||
        !std::getline(fields, cpus)) {
      continue;
    }
    if (!row.partition.empty() && row.partition.back() == '*') {
      row.partition.pop_back();
      default_partition = row.partition;
    }
    try {
      row.cpus = std::stoi(cpus);
    } catch (const std::exception&) {
      continue;
    }
    partitions.insert(row.partition);
    rows.push_back(row);
  }
  cap.partition = partition.empty() ? default_partition : partition;
  if (cap.partition.empty()) {
    return InvalidArgumentError(
        "slurm.partition: the cluster has no default partition (sinfo marks none with '*'); "
        "name one in the spec's slurm.partition");
  }
  for (const Row& row : rows) {
    if (row.partition != cap.partition) continue;
    nodes.insert(row.node);
    cap.max_cpus_per_node = std::max(cap.max_cpus_per_node, row.cpus);
  }
  cap.nodes = static_cast<int>(nodes.size());
  if (cap.nodes == 0) {
    std::string known;
    for (const auto& p : partitions) known += (known.empty() ? "" : ", ") + p;
    return InvalidArgumentError(fmt::format(
        "slurm.partition: no partition '{}' with nodes on this cluster (sinfo lists: {}); set "
        "slurm.partition to one of them",
        cap.partition, known.empty() ? "none" : known));
  }
  return cap;
}

StatusOr<PartitionCapacity> QueryPartition(const std::string& partition) {
  BATCHLAB_ASSIGN_OR_RETURN(CommandResult r,
                            RunCapturedCommand({"sinfo", "-h", "-N", "-o", "%N|%P|%c"}));
  if (r.exit_code != 0) {
    return UnavailableError(fmt::format(
        "--backend slurm: `sinfo` exited {} ({}); is slurmctld reachable (SLURM_CONF)?",
        r.exit_code, r.err.substr(0, r.err.find('\n'))));
  }
  return ParseSinfoNodes(r.out, partition);
}

Status CheckPartitionFits(const Plan& plan, const SlurmSettings& slurm,
                          const PartitionCapacity& cap) {
  for (const PlannedRun& r : plan.runs) {
    const int nodes = r.config.value("nodes", 1);
    const int per_node = r.config.value("ranks_per_node", 1);
    if (nodes > cap.nodes) {
      return InvalidArgumentError(fmt::format(
          "nodes: run {} ({} = {}) needs {} nodes, but partition '{}' has {} (sinfo): Slurm could "
          "never run it; lower `nodes` to at most {}, or set slurm.partition to a larger one",
          r.id, SourceOf(r, "nodes"), nodes, nodes, cap.partition, cap.nodes, cap.nodes));
    }
    const int cpus_per_task = slurm.cpus_per_task > 0
                                  ? slurm.cpus_per_task
                                  : std::max(1, r.slots / std::max(1, r.world_size));
    if (per_node * cpus_per_task > cap.max_cpus_per_node) {
      return InvalidArgumentError(fmt::format(
          "ranks_per_node: run {} ({} = {}) needs {} CPUs on each node ({} per rank{}), but the "
          "largest node of partition '{}' has {} (sinfo): Slurm could never run it; lower "
          "`ranks_per_node` (and raise `nodes`){}",
          r.id, SourceOf(r, "ranks_per_node"), per_node, per_node * cpus_per_task, cpus_per_task,
          slurm.cpus_per_task > 0 ? ", slurm.cpus_per_task" : ", resources.slots_per_rank",
          cap.partition, cap.max_cpus_per_node,
          slurm.cpus_per_task > 0 ? " or slurm.cpus_per_task" : " or resources.slots_per_rank"));
    }
  }
  return OkStatus();
}

}  // namespace batchlab::orchestrator
