// Pre-flight for --backend slurm: before anything is submitted, every run of the plan must fit
// the partition it goes to (the spec's slurm.partition, else the cluster's default partition),
// as Slurm reports it (`sinfo -h -N -o "%N|%P|%c"`: node, partition, CPUs). A run asking for
// more nodes than the partition has, or more CPUs on one node (ranks_per_node x CPUs per task)
// than its largest node has, would pend forever ("the partition can never run this job"); it is
// refused here with the field to change, and `sweep run` exits 2.
//
//   BATCHLAB_ASSIGN_OR_RETURN(PartitionCapacity cap, QueryPartition(spec.slurm.partition));
//   BATCHLAB_RETURN_IF_ERROR(CheckPartitionFits(plan, spec.slurm, cap));
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_PREFLIGHT_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_PREFLIGHT_H_

#include <string>

#include "base/status.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {

struct PartitionCapacity {
  std::string partition;
  int nodes = 0;              // distinct nodes in the partition
  int max_cpus_per_node = 0;  // CPUs of its largest node
};

// From `sinfo -h -N -o "%N|%P|%c"` output: the capacity of `partition` ("" = the default one,
// marked '*' by sinfo). INVALID_ARGUMENT naming slurm.partition when there is no such partition.
StatusOr<PartitionCapacity> ParseSinfoNodes(const std::string& text, const std::string& partition);

// Runs sinfo; UNAVAILABLE when it fails (no controller reachable).
StatusOr<PartitionCapacity> QueryPartition(const std::string& partition);

// INVALID_ARGUMENT naming `nodes` (or `ranks_per_node` / slurm.cpus_per_task) and where the
// value comes from in the spec, for the first run that can never fit `cap`.
Status CheckPartitionFits(const Plan& plan, const SlurmSettings& slurm,
                          const PartitionCapacity& cap);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_PREFLIGHT_H_
