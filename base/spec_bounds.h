// The bounds on every number a spec may hold (docs/spec.md, "Bounds"). They are chosen so that
// every product the orchestrator forms from spec values (world size, slots, cross-product size,
// seeds) fits its type: nothing a spec says can overflow, wrap or divide by zero.
#ifndef BATCHLAB_BASE_SPEC_BOUNDS_H_
#define BATCHLAB_BASE_SPEC_BOUNDS_H_

namespace batchlab {

// Any integer, unless a tighter bound is listed: 2^53 - 1, the largest integer every JSON reader
// (and a double) holds exactly.
constexpr long long kMaxSpecInteger = 9'007'199'254'740'991;
// Any other number (lr.base, budget.epochs, constraint scales, ...): at most 1e15 in magnitude.
constexpr double kMaxSpecNumber = 1e15;

constexpr long long kMaxNodes = 65'536;
constexpr long long kMaxRanksPerNode = 4'096;
constexpr long long kMaxWorldSize = 1'048'576;  // nodes x ranks_per_node
constexpr long long kMaxAccumulation = 65'536;
constexpr long long kMaxThreads = 1'024;  // threads, resources.slots_per_rank, slurm.cpus_per_task
// resources.gpus_per_rank: world_size x GPUs per rank stays below 2^27, an int.
constexpr long long kMaxGpusPerRank = 64;
constexpr long long kMaxPointsEnumerated = 2'000'000;  // cross product; also repeats, random.count,
                                                       // max_runs
constexpr long long kMaxRetries = 100;
constexpr double kMaxSeconds = 1e9;  // timeouts, backoff, expected_seconds, comm.timeout_seconds
constexpr long long kMaxSlurmMinutes = 525'600;  // slurm.time_limit_minutes: one year

}  // namespace batchlab

#endif  // BATCHLAB_BASE_SPEC_BOUNDS_H_
