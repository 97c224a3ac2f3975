// slurm.elastic (docs/spec.md; issue 35): an attempt of a run may go on at fewer nodes than the
// run's `nodes`, down to slurm.elastic.min_nodes, when the partition cannot give it all of them.
// The runner re-shards the checkpoint onto the ranks it got (docs/protocol.md, "Elastic
// resume"); this file holds the plan-time check and the node request an attempt's job makes.
//
//   BATCHLAB_RETURN_IF_ERROR(CheckElastic(spec.slurm, plan));   // exit 2 at plan time
//   ElasticNodeRange(spec.slurm, 3) == {2, 3}   // min_nodes 2
//   ElasticNodeCount({2, 3}, /*idle=*/2) == 2   // a pending 3-node job is lowered to 2
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_ELASTIC_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_ELASTIC_H_

#include <optional>
#include <string>
#include <utility>

#include "base/status.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {

// INVALID_ARGUMENT naming the field and the fix for the first run that cannot go on at every
// node count from min_nodes to its `nodes`: min_nodes above its nodes, a sync mode whose state
// does not re-shard (async_ps, backup), a user program (its client checkpoints do not re-shard),
// or a batch size (or batch_schedule size) not divisible by world_size x accumulation at one of
// those node counts. OK when the spec has no slurm.elastic.
Status CheckElastic(const SlurmSettings& slurm, const Plan& plan);

// The node counts an attempt of a run with `nodes` may take: {min_nodes, nodes}; {nodes, nodes}
// without slurm.elastic.
std::pair<int, int> ElasticNodeRange(const SlurmSettings& slurm, int nodes);

// The node count a pending job of that range is lowered to when the partition has `idle` idle
// nodes: max(min_nodes, idle); nullopt when idle >= nodes (it pends for another reason, e.g.
// priority: lowering it would not start it sooner).
std::optional<int> ElasticNodeCount(std::pair<int, int> range, int idle);

// The idle nodes in `sinfo -h -t idle -o %D` output (one count per line, summed); nullopt when
// it holds no count.
std::optional<int> ParseIdleNodes(const std::string& sinfo);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_ELASTIC_H_
