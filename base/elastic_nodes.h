// slurm.elastic (docs/spec.md, "Elastic Slurm attempts"; issue 35): an attempt's job may get
// fewer nodes than its run's `nodes`. The orchestrator tells every rank the fewest it may run on
// through this environment variable (mpirun forwards it with -x); the runner then takes `nodes`
// from the ranks it was started with (runner/config/run_config.cc, LoadRunConfig). Not part of
// the config, so no run id or checkpoint hash sees it.
#ifndef BATCHLAB_BASE_ELASTIC_NODES_H_
#define BATCHLAB_BASE_ELASTIC_NODES_H_

namespace batchlab::protocol {

inline constexpr const char* kElasticMinNodesEnv = "BATCHLAB_ELASTIC_MIN_NODES";

}  // namespace batchlab::protocol

#endif  // BATCHLAB_BASE_ELASTIC_NODES_H_
