#include "orchestrator/launch/slurm_launcher.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <boost/process/search_path.hpp>
#include <nlohmann/json.hpp>

#include "base/elapsed.h"
#include "base/run_protocol.h"

#include "orchestrator/process/captured_command.h"
#include "orchestrator/launch/local_launcher.h"
#include "orchestrator/launch/slurm_elastic.h"
#include "results/number_format.h"

namespace batchlab::orchestrator {
namespace {

std::string FieldOf(const std::string& text, const std::string& key) {
  std::string needle = key + "=";
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\n') {
      size_t start = pos + needle.size();
      size_t end = text.find_first_of(" \n", start);
      return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    pos += needle.size();
  }
  return "";
}

void ParseExitCode(const std::string& text, SlurmJobInfo* info) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return;
  try {
    info->exit_code = std::stoi(text.substr(0, colon));
    int sig = std::stoi(text.substr(colon + 1));
    if (sig != 0) info->signal = sig;
  } catch (const std::exception&) {
  }
}

// The spec's sbatch_args already ask for GPUs (their request wins over gpus_per_rank's).
bool RequestsGpus(const std::vector<std::string>& sbatch_args) {
  for (const std::string& arg : sbatch_args) {
    const std::string name = arg.substr(0, arg.find('='));
    if (name == "--gres" || name == "--gpus" || name == "-G" || name == "--gpus-per-node" ||
        name == "--gpus-per-task" || name == "--gpus-per-socket") {
      return true;
    }
  }
  return false;
}

bool IsUnsatisfiable(const std::string& reason) {
  return reason == "PartitionNodeLimit" || reason == "PartitionTimeLimit" ||
         reason == "BadConstraints" || reason == "PartitionConfig";
}

// slurm.elastic: a job submitted for the run's own node count that is still pending
// pending_seconds after submission (or pending for a reason that never clears) while the
// partition has fewer idle nodes than it asks for is lowered to what is idle (at least
// min_nodes), once.
struct Widening {
  double after_seconds = 0;
  std::pair<int, int> range;  // {min_nodes, nodes}
  int ranks_per_node = 1;
};

class SlurmJob final : public Job {
 public:
  SlurmJob(std::string job_id, double poll_interval, std::optional<Widening> widening)
      : job_id_(std::move(job_id)),
        poll_interval_(poll_interval),
        widening_(std::move(widening)),
        submitted_(SteadySeconds()) {}

  JobStatus Poll() override {
    if (last_.done) return last_;
    double now = SteadySeconds();
    if (now - last_poll_ < poll_interval_) return last_;
    last_poll_ = now;
    std::optional<SlurmJobInfo> info;
    auto r = RunCapturedCommand({"scontrol", "show", "job", "-o", job_id_});
    if (r.ok() && r->exit_code == 0) info = ParseScontrolJob(r->out);
    if (!info) info = FromSacct();
    if (!info) {
      // Neither scontrol nor sacct knows the job: it is gone without a recorded end.
      if (++unknown_polls_ >= 10) {
        last_.done = true;
        last_.detail = "UNKNOWN (Slurm has no record of the job)";
      }
      return last_;
    }
    unknown_polls_ = 0;
    last_.detail = widened_.empty() ? info->state : info->state + "; " + widened_;
    if (info->state == "PENDING" && widening_ &&
        (now - submitted_ >= widening_->after_seconds || IsUnsatisfiable(info->reason))) {
      Widen(*info);
    }
    unsatisfiable_polls_ =
        info->state == "PENDING" && IsUnsatisfiable(info->reason) ? unsatisfiable_polls_ + 1 : 0;
    if (unsatisfiable_polls_ >= 3) {
      // Slurm would keep it pending forever: more nodes / CPUs / time than the partition has.
      RunCapturedCommand({"scancel", job_id_}).status().IgnoreError();
      last_.done = true;
      last_.unrunnable = true;
      last_.detail = "PENDING (" + info->reason + "): the partition can never run this job";
      return last_;
    }
    last_.host = info->nodes;
    if (IsSlurmTerminalState(info->state)) {
      last_.done = true;
      last_.exit_code = info->exit_code;
      last_.signal = info->signal;
      if (info->state != "COMPLETED" && info->state != "FAILED" && !info->signal) {
        last_.signal = 15;  // CANCELLED / TIMEOUT / NODE_FAIL ... without a recorded signal
      }
      if (info->signal) last_.exit_code.reset();
    }
    return last_;
  }

  void Terminate() override { RunCapturedCommand({"scancel", job_id_}).status().IgnoreError(); }
  void Kill() override {
    RunCapturedCommand({"scancel", "--signal=KILL", "--full", job_id_}).status().IgnoreError();
  }

 private:
  // Takes what the partition can give now: the pending job's node (and task) count lowered to
  // the idle nodes of its partition, at least min_nodes. Asked again at the next poll if sinfo
  // or scontrol fails; nothing done while enough nodes are idle.
  void Widen(const SlurmJobInfo& info) {
    std::vector<std::string> sinfo = {"sinfo", "-h", "-t", "idle", "-o", "%D"};
    if (!info.partition.empty()) sinfo.insert(sinfo.begin() + 1, {"-p", info.partition});
    auto idle_out = RunCapturedCommand(sinfo);
    if (!idle_out.ok() || idle_out->exit_code != 0) return;
    const std::optional<int> idle = ParseIdleNodes(idle_out->out);
    if (!idle) return;
    const std::optional<int> nodes = ElasticNodeCount(widening_->range, *idle);
    if (!nodes) return;
    auto r = RunCapturedCommand({"scontrol", "update", "JobId=" + job_id_,
                                 fmt::format("NumNodes={}", *nodes),
                                 fmt::format("NumTasks={}", *nodes * widening_->ranks_per_node)});
    if (!r.ok() || r->exit_code != 0) return;
    widened_ = fmt::format(
        "pending {} s ({}), {} node(s) idle: lowered to {} of {} nodes (slurm.elastic)",
        results::FixedNumber(SteadySeconds() - submitted_, 0), info.reason, *idle, *nodes, widening_->range.second);
    widening_.reset();
  }

  std::optional<SlurmJobInfo> FromSacct() {
    auto r = RunCapturedCommand(
        {"sacct", "-n", "-P", "-X", "-j", job_id_, "--format=State,ExitCode,NodeList"});
    if (!r.ok() || r->exit_code != 0) return std::nullopt;
    std::istringstream lines(r->out);
    std::string line;
    if (!std::getline(lines, line) || line.empty()) return std::nullopt;
    SlurmJobInfo info;
    std::istringstream fields(line);
    std::string exit_code;
    std::getline(fields, info.state, '|');
    std::getline(fields, exit_code, '|');
    std::getline(fields, info.nodes, '|');
    info.state = info.state.substr(0, info.state.find(' '));  // "CANCELLED by 0"
    ParseExitCode(exit_code, &info);
    return info;
  }

  std::string job_id_;
  double poll_interval_;
  std::optional<Widening> widening_;  // reset once done
  double submitted_;
  std::string widened_;  // what Widen did, for the job's detail
  double last_poll_ = 0;
  int unknown_polls_ = 0;
  int unsatisfiable_polls_ = 0;
  JobStatus last_;
};

class SlurmLauncher final : public Launcher {
 public:
  explicit SlurmLauncher(SlurmLaunchSettings settings) : settings_(std::move(settings)) {}
  const char* name() const override { return "slurm"; }

  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& request) override {
    std::string script = protocol::JobScriptPath(request.attempt_dir);
    {
      std::ofstream out(script);
      out << "#!/bin/sh\n# batchlab run " << request.run_id << " attempt " << request.attempt
          << ": the command line is passed by sbatch as arguments\n"
          << "# rank 0 of a user program listens on the allocation's first node\n"
          << "if [ -n \"$SLURM_JOB_NODELIST\" ]; then\n"
          << "  MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
          << "  export MASTER_ADDR\n"
          << "fi\n"
          << "# Open MPI's session folder, one per job: the mpiruns of two jobs that start and end\n"
          << "# on one node at once race on the shared /tmp/ompi.<node>.<uid> (orte_session_dir)\n"
          << "if [ -n \"$SLURM_JOB_ID\" ] && [ -z \"$OMPI_MCA_orte_tmpdir_base\" ]; then\n"
          << "  OMPI_MCA_orte_tmpdir_base=\"${TMPDIR:-/tmp}/batchlab-ompi.$SLURM_JOB_ID\"\n"
          << "  export OMPI_MCA_orte_tmpdir_base\n"
          << "  mkdir -p \"$OMPI_MCA_orte_tmpdir_base\"\n"
          << "fi\n"
          << "# slurm.elastic: the allocation may hold fewer nodes than the run asked for; mpirun\n"
          << "# starts ranks_per_node ranks on each node it got\n"
          << "if [ -n \"$BATCHLAB_ELASTIC_RANKS_PER_NODE\" ] && [ \"$1\" = mpirun ] && "
             "[ \"$2\" = -np ]; then\n"
          << "  shift 3\n"
          << "  set -- mpirun -np $((SLURM_JOB_NUM_NODES * BATCHLAB_ELASTIC_RANKS_PER_NODE)) "
             "\"$@\"\n"
          << "fi\n"
          << "exec \"$@\"\n";
      if (!out) return InternalError(fmt::format("cannot write {}", script));
    }
    std::vector<std::string> argv = {"sbatch"};
    auto args = SbatchArguments(settings_, request, script, geteuid() == 0);
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = settings_.env;
    for (const auto& [k, v] : request.env) env[k] = v;
    if (!env.count("OMPI_MCA_btl") && getenv("OMPI_MCA_btl") == nullptr) {
      // Shared memory between the ranks of one node; TCP between nodes (docs/cluster.md).
      env["OMPI_MCA_btl"] = request.nodes > 1 ? "self,vader,tcp" : "self,vader";
    }
    if (!env.count("OMPI_MCA_pml") && getenv("OMPI_MCA_pml") == nullptr)
      env["OMPI_MCA_pml"] = "ob1";
    const std::pair<int, int> range = ElasticNodeRange(settings_.slurm, request.nodes);
    std::optional<Widening> widening;
    if (range.first < range.second) {
      env["BATCHLAB_ELASTIC_RANKS_PER_NODE"] = std::to_string(request.ranks_per_node);
      widening =
          Widening{settings_.slurm.elastic->pending_seconds, range, request.ranks_per_node};
    }
    BATCHLAB_ASSIGN_OR_RETURN(CommandResult r, RunCapturedCommand(argv, env));
    if (r.exit_code != 0) {
      return UnavailableError(fmt::format("sbatch exited {}: {}", r.exit_code, r.err));
    }
    std::string job_id = r.out.substr(0, r.out.find_first_of(";\n"));
    if (job_id.empty()) return UnavailableError("sbatch printed no job id: " + r.out);
    nlohmann::json launch = {{"backend", "slurm"}, {"job_id", job_id}, {"argv", argv}};
    std::ofstream(protocol::LaunchPath(request.attempt_dir)) << launch.dump(2) << "\n";
    return std::unique_ptr<Job>(
        std::make_unique<SlurmJob>(job_id, settings_.poll_interval_seconds, widening));
  }

  void CleanUpStale(const std::string& attempt_dir) override {
    std::ifstream in(protocol::LaunchPath(attempt_dir));
    if (!in) return;
    nlohmann::json launch = nlohmann::json::parse(in, nullptr, false);
    if (!launch.is_object() || launch.value("backend", "") != "slurm") return;
    std::string id = launch.value("job_id", "");
    if (!id.empty()) RunCapturedCommand({"scancel", id}).status().IgnoreError();
  }

 private:
  SlurmLaunchSettings settings_;
};

}  // namespace

std::vector<std::string> SbatchArguments(const SlurmLaunchSettings& settings,
                                         const LaunchRequest& request, const std::string& script,
                                         bool as_root) {
  int cpus = settings.slurm.cpus_per_task > 0 ? settings.slurm.cpus_per_task
                                              : std::max(1, request.cpus_per_rank);
  std::vector<std::string> a = {
      "--parsable",
      fmt::format("--job-name=batchlab-{}-{}", request.run_id, request.attempt),
      fmt::format("--nodes={}", request.nodes),
      fmt::format("--ntasks-per-node={}", request.ranks_per_node),
      fmt::format("--cpus-per-task={}", cpus),
      fmt::format("--time={}", settings.slurm.time_limit_minutes),
      "--output=" + protocol::StdoutPath(request.attempt_dir),
      "--error=" + protocol::StderrPath(request.attempt_dir),
      "--chdir=" + (request.workdir.empty() ? request.attempt_dir : request.workdir),
      "--export=ALL",
  };
  // Each allocation is one attempt (attempt folders are never reused): Slurm must not requeue
  // it; a preempted or timed-out run checkpoints and the orchestrator submits a new attempt.
  a.push_back("--no-requeue");
  if (settings.slurm.signal_seconds > 0) {
    // SIGUSR2 to the batch shell (exec'd into mpirun, which forwards it to every rank) this long
    // before the limit: the ranks checkpoint and exit 7 (base/run_protocol.h). Not SIGUSR1,
    // which NCCL uses.
    const int lead = std::min(settings.slurm.signal_seconds, settings.slurm.time_limit_minutes * 30);
    a.push_back(fmt::format("--signal=B:USR2@{}", std::max(1, lead)));
  }
  if (!settings.slurm.partition.empty()) a.push_back("--partition=" + settings.slurm.partition);
  if (request.gpus_per_rank > 0 && !RequestsGpus(settings.slurm.sbatch_args)) {
    // GPUs counted per node: ranks_per_node x g on each node; Slurm sets CUDA_VISIBLE_DEVICES
    // to the node's GPUs of the job, so each rank's device is its local rank.
    a.push_back(fmt::format("--gpus-per-task={}", request.gpus_per_rank));
  }
  a.insert(a.end(), settings.slurm.sbatch_args.begin(), settings.slurm.sbatch_args.end());
  a.push_back(script);
  if (request.launch == LaunchMode::kTorchrun) {
    // One task per rank, started by Slurm; batchlab-rank maps SLURM_PROCID etc.
    a.push_back("srun");
    a.push_back("--kill-on-bad-exit=1");
  } else {
    a.push_back("mpirun");
    a.push_back("-np");
    a.push_back(std::to_string(request.world_size));
    // The allocation's cores are the job's own (Slurm's cgroup): each rank pinned to its cores.
    for (const std::string& b : BindingArguments(/*own_cores=*/true, cpus, settings.mpirun_args)) {
      a.push_back(b);
    }
    if (as_root) a.push_back("--allow-run-as-root");
    a.insert(a.end(), settings.mpirun_args.begin(), settings.mpirun_args.end());
    for (const auto& [name, value] : request.env) {
      a.push_back("-x");
      a.push_back(name);
    }
  }
  a.insert(a.end(), request.rank_command.begin(), request.rank_command.end());
  return a;
}

std::optional<SlurmJobInfo> ParseScontrolJob(const std::string& text) {
  SlurmJobInfo info;
  info.state = FieldOf(text, "JobState");
  if (info.state.empty()) return std::nullopt;
  ParseExitCode(FieldOf(text, "ExitCode"), &info);
  info.nodes = FieldOf(text, "NodeList");
  info.reason = FieldOf(text, "Reason");
  info.partition = FieldOf(text, "Partition");
  if (info.nodes == "(null)") info.nodes.clear();
  return info;
}

bool IsSlurmTerminalState(const std::string& s) {
  return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED" || s == "TIMEOUT" ||
         s == "NODE_FAIL" || s == "PREEMPTED" || s == "OUT_OF_MEMORY" || s == "BOOT_FAIL" ||
         s == "DEADLINE" || s == "SPECIAL_EXIT" || s == "REVOKED";
}

StatusOr<std::unique_ptr<Launcher>> MakeSlurmLauncher(SlurmLaunchSettings settings) {
  for (const char* tool : {"sbatch", "scontrol", "scancel"}) {
    if (boost::process::search_path(tool).empty()) {
      return FailedPreconditionError(fmt::format(
          "--backend slurm: `{}` is not in PATH; install slurm-client (scripts/install-deps.sh)",
          tool));
    }
  }
  return std::unique_ptr<Launcher>(std::make_unique<SlurmLauncher>(std::move(settings)));
}

}  // namespace batchlab::orchestrator
