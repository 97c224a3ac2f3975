// Where and how a spec's runs run: its resources, launch settings and Slurm settings (see
// spec_sections.h).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/json_path.h"
#include "base/spec_bounds.h"
#include "orchestrator/spec/launch_options.h"
#include "orchestrator/spec/spec_reader.h"
#include "orchestrator/spec/spec_sections.h"

namespace batchlab::orchestrator::spec_parsing {

using nlohmann::ordered_json;

Status ParseResources(const ordered_json& r, Resources* out) {
  if (!r.is_object()) return Bad("resources", "is not an object");
  BATCHLAB_RETURN_IF_ERROR(
      OnlyKeys(r, "resources",
               {"slots_per_rank", "timeout_seconds", "retries", "retry_backoff_seconds",
                "expected_seconds", "gpus_per_rank"}));
  if (r.contains("slots_per_rank")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        long long v, Integer(r["slots_per_rank"], "resources.slots_per_rank", 1, kMaxThreads));
    out->slots_per_rank = static_cast<int>(v);
  }
  if (r.contains("timeout_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out->timeout_seconds,
        Number(r["timeout_seconds"], "resources.timeout_seconds", 0, kMaxSeconds));
  }
  if (r.contains("retries")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(r["retries"], "resources.retries", 0, kMaxRetries));
    out->retries = static_cast<int>(v);
  }
  if (r.contains("retry_backoff_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out->retry_backoff_seconds,
        Number(r["retry_backoff_seconds"], "resources.retry_backoff_seconds", 0, kMaxSeconds));
  }
  if (r.contains("expected_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out->expected_seconds,
        Number(r["expected_seconds"], "resources.expected_seconds", 0, kMaxSeconds));
  }
  if (r.contains("gpus_per_rank")) {
    const ordered_json& g = r["gpus_per_rank"];
    if (!g.is_number_integer() && g.is_number() && g.get<double>() >= 0) {
      return Bad("resources.gpus_per_rank",
                 fmt::format("{} is not a whole number of GPUs: give each rank 0, 1, 2, ... GPUs "
                             "(GPUs are not shared between ranks)",
                             g.dump()));
    }
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(g, "resources.gpus_per_rank", 0, kMaxGpusPerRank));
    out->gpus_per_rank = static_cast<int>(v);
  }
  return OkStatus();
}

Status ParseLaunch(const ordered_json& l, LaunchSettings* out) {
  if (!l.is_object()) return Bad("launch", "is not an object {env, mpirun_args}");
  BATCHLAB_RETURN_IF_ERROR(OnlyKeys(l, "launch", {"env", "mpirun_args"}));
  if (l.contains("env")) {
    if (!l["env"].is_object()) return Bad("launch.env", "is not an object of \"NAME\": \"value\"");
    for (auto it = l["env"].begin(); it != l["env"].end(); ++it) {
      BATCHLAB_ASSIGN_OR_RETURN(out->env[it.key()],
                                String(it.value(), JoinPath("launch.env", it.key())));
    }
    BATCHLAB_RETURN_IF_ERROR(CheckEnvironment(out->env, "launch.env"));
  }
  if (l.contains("mpirun_args")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->mpirun_args, StringList(l["mpirun_args"], "launch.mpirun_args"));
    BATCHLAB_RETURN_IF_ERROR(CheckMpirunArgs(out->mpirun_args, "launch.mpirun_args"));
  }
  return OkStatus();
}

Status ParseSlurm(const ordered_json& s, SlurmSettings* out) {
  if (!s.is_object()) return Bad("slurm", "is not an object");
  BATCHLAB_RETURN_IF_ERROR(
      OnlyKeys(s, "slurm",
               {"partition", "time_limit_minutes", "cpus_per_task", "signal_seconds",
                "sbatch_args", "elastic"}));
  if (s.contains("partition")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->partition, String(s["partition"], "slurm.partition"));
  }
  if (s.contains("time_limit_minutes")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        long long v,
        Integer(s["time_limit_minutes"], "slurm.time_limit_minutes", 1, kMaxSlurmMinutes));
    out->time_limit_minutes = static_cast<int>(v);
  }
  if (s.contains("signal_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(s["signal_seconds"], "slurm.signal_seconds", 0, 65535));
    out->signal_seconds = static_cast<int>(v);
  }
  if (s.contains("cpus_per_task")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(s["cpus_per_task"], "slurm.cpus_per_task", 1, kMaxThreads));
    out->cpus_per_task = static_cast<int>(v);
  }
  if (s.contains("sbatch_args")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->sbatch_args, StringList(s["sbatch_args"], "slurm.sbatch_args"));
    BATCHLAB_RETURN_IF_ERROR(CheckSbatchArgs(out->sbatch_args, "slurm.sbatch_args"));
  }
  if (s.contains("elastic")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->elastic, ParseSlurmElastic(s["elastic"]));
  }
  return OkStatus();
}

StatusOr<SlurmElastic> ParseSlurmElastic(const ordered_json& e) {
  if (!e.is_object()) {
    return Bad("slurm.elastic", "is not an object; write {\"min_nodes\": 2} (see docs/spec.md)");
  }
  BATCHLAB_RETURN_IF_ERROR(OnlyKeys(e, "slurm.elastic", {"min_nodes", "pending_seconds"}));
  if (!e.contains("min_nodes")) {
    return Bad("slurm.elastic.min_nodes",
               "is missing; give the fewest nodes an attempt may run on, e.g. {\"min_nodes\": 2}");
  }
  SlurmElastic out;
  const ordered_json& n_json = e["min_nodes"];
  if (n_json.is_number_integer() && n_json.get<long long>() < 1) {
    return Bad("slurm.elastic.min_nodes",
               fmt::format("{} is below 1: an attempt runs on at least one node; set it to 1 .. "
                           "the run's `nodes`",
                           n_json.dump()));
  }
  BATCHLAB_ASSIGN_OR_RETURN(long long n,
                            Integer(e["min_nodes"], "slurm.elastic.min_nodes", 1, kMaxNodes));
  out.min_nodes = static_cast<int>(n);
  if (e.contains("pending_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out.pending_seconds,
        Number(e["pending_seconds"], "slurm.elastic.pending_seconds", 0, kMaxSeconds));
  }
  return out;
}

}  // namespace batchlab::orchestrator::spec_parsing
