#include "orchestrator/launch/local_launcher.h"
#include "base/run_protocol.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <nlohmann/json.hpp>

#include "orchestrator/plan/gpu_slots.h"
#include "orchestrator/process/job_processes.h"
#include "orchestrator/process/stderr_copier.h"

extern char** environ;

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;

// Runs in the forked child before exec: a session of its own (so every process of the job can
// be found, job_processes.h), and SIGTERM when the orchestrator dies. An orchestrator killed
// between the fork and prctl() would never send it: the child then sees another parent and
// stops itself (the race prctl(2) describes).
struct ChildSetup : bp::extend::handler {
  pid_t orchestrator = getpid();
  template <class Executor>
  void on_exec_setup(Executor& /*exec*/) const {
    setsid();
    // Its stderr is a pipe to the orchestrator: once the orchestrator is gone, mpirun's notice
    // that it forwards the SIGTERM below would kill it with SIGPIPE before it stops the ranks,
    // and they would train on unwatched. Ignored (inherited across exec), the write just fails.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != orchestrator) raise(SIGTERM);
  }
};

// Runs in the forked child before exec: its stderr is the write end of the copier's pipe.
struct StderrTo : bp::extend::handler {
  int fd;
  template <class Executor>
  void on_exec_setup(Executor& /*exec*/) const {
    dup2(fd, STDERR_FILENO);  // the copy has no FD_CLOEXEC: the program keeps it
  }
};

const std::map<std::string, std::string>& DefaultLaunchEnv() {
  static const std::map<std::string, std::string> kDefaults = {
      {"OMPI_MCA_btl", "self,vader"},
      {"OMPI_MCA_pml", "ob1"},
  };
  return kDefaults;
}

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

class LocalJob final : public Job {
 public:
  LocalJob(bp::child child, std::string host, std::string attempt_dir,
           std::unique_ptr<StderrCopier> stderr_copier)
      : child_(std::move(child)), host_(std::move(host)), stderr_(std::move(stderr_copier)) {
    processes_ = {child_.id(), std::move(attempt_dir)};
  }
  ~LocalJob() override {
    if (!finished_) {
      Kill();
      std::error_code ec;
      child_.wait(ec);
    }
  }

  JobStatus Poll() override {
    JobStatus s;
    s.host = host_;
    if (!finished_) {
      std::error_code ec;
      bool running = child_.running(ec);
      if (running && !ec) return s;
      finished_ = true;
      raw_status_ = child_.native_exit_code();
      // Ranks (each in a process group of its own) may outlive an mpirun that died abnormally.
      processes_.Stop(std::chrono::milliseconds(0));
      // A protocol outcome (3 target reached, ...) is no error: mpirun's notice of it is left out.
      const bool outcome = WIFEXITED(raw_status_) && WEXITSTATUS(raw_status_) != 0 &&
                           protocol::OutcomeForExitCode(WEXITSTATUS(raw_status_)).has_value();
      stderr_->Finish(outcome);
    }
    s.done = true;
    if (WIFEXITED(raw_status_)) s.exit_code = WEXITSTATUS(raw_status_);
    if (WIFSIGNALED(raw_status_)) s.signal = WTERMSIG(raw_status_);
    return s;
  }

  void Terminate() override {
    if (!finished_) processes_.Signal(SIGTERM);
  }
  void Kill() override {
    if (!finished_) processes_.Signal(SIGKILL);
  }

 private:
  bp::child child_;
  std::string host_;
  JobProcesses processes_;
  bool finished_ = false;
  int raw_status_ = 0;
  std::unique_ptr<StderrCopier> stderr_;  // destroyed after the child is waited for
};

class LocalLauncher final : public Launcher {
 public:
  explicit LocalLauncher(LocalLaunchSettings settings)
      : settings_(std::move(settings)), host_(HostName()), current_(CurrentEnvironment()) {
    overrides_ = LaunchEnvironmentOverrides(settings_.env, current_);
  }

  const char* name() const override { return "local"; }

  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& request) override {
    boost::filesystem::path exe;
    std::vector<std::string> args;
    if (request.launch == LaunchMode::kTorchrun) {
      // batchlab-rank --spawn K -- ...: starts the ranks itself, no mpirun.
      if (request.spawn_command.empty()) return InternalError("torchrun launch without a command");
      exe = request.spawn_command.front();
      args.assign(request.spawn_command.begin() + 1, request.spawn_command.end());
    } else {
      exe = settings_.mpirun;
      if (settings_.mpirun.find('/') == std::string::npos) {
        exe = bp::search_path(settings_.mpirun);
        if (exe.empty()) {
          return FailedPreconditionError(
              fmt::format("`{}` is not in PATH; install openmpi-bin (scripts/install-deps.sh)",
                          settings_.mpirun));
        }
      }
      int cores = static_cast<int>(std::thread::hardware_concurrency());
      args = MpirunArguments(settings_, request, geteuid() == 0, cores > 0 ? cores : 1);
    }
    bp::environment env = boost::this_process::environment();
    // set(), not operator[]: Boost 1.74's environment::find reads past shorter entries (ASan).
    for (const auto& [k, v] : overrides_) env.set(k, v);
    for (const auto& [k, v] : RequestEnvironment(request, current_)) env.set(k, v);
    const std::string dir = request.attempt_dir;
    env.set(kAttemptDirVariable, dir);  // tags every process of the job (job_processes.h)
    const std::string workdir = request.workdir.empty() ? dir : request.workdir;
    // stderr.log is written through a pipe (stderr_copier.h), not by the job itself.
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return UnavailableError(fmt::format("cannot create a pipe for {}/stderr.log: {}", dir,
                                          std::strerror(errno)));
    }
    auto copier = std::make_unique<StderrCopier>(fds[0], protocol::StderrPath(dir));
    try {
      bp::child child(exe, bp::args(args), env,
                      bp::std_in<bp::null, bp::std_out>(protocol::StdoutPath(dir)),
                      StderrTo{{}, fds[1]},
                      bp::start_dir(workdir), ChildSetup{});
      ::close(fds[1]);
      nlohmann::json launch = {{"backend", "local"},
                               {"pid", child.id()},
                               {"host", host_},
                               {"attempt_dir", dir},
                               {"argv", args}};
      std::ofstream(protocol::LaunchPath(dir)) << launch.dump(2) << "\n";
      return std::unique_ptr<Job>(
          std::make_unique<LocalJob>(std::move(child), host_, dir, std::move(copier)));
    } catch (const bp::process_error& e) {
      ::close(fds[1]);
      return UnavailableError(fmt::format("cannot start {}: {}", exe.string(), e.what()));
    }
  }

  void CleanUpStale(const std::string& attempt_dir) override {
    std::ifstream in(protocol::LaunchPath(attempt_dir));
    nlohmann::json launch = nlohmann::json::parse(in, nullptr, false);  // may be absent
    if (launch.is_object() &&
        (launch.value("backend", "local") != "local" || launch.value("host", host_) != host_)) {
      return;  // started elsewhere
    }
    // Every process tagged with this attempt's folder (not its recorded pid's session: the pid
    // may have been reused since), wherever it was reparented.
    JobProcesses{0, attempt_dir}.Stop(std::chrono::seconds(5));
  }

 private:
  LocalLaunchSettings settings_;
  std::string host_;
  std::map<std::string, std::string> current_;  // the orchestrator's own environment
  std::map<std::string, std::string> overrides_;
};

}  // namespace

std::vector<std::string> MpirunArguments(const LocalLaunchSettings& settings,
                                         const LaunchRequest& request, bool as_root,
                                         int hardware_cores) {
  std::vector<std::string> args = {"-np", std::to_string(request.world_size)};
  const bool oversubscribed =
      request.world_size > settings.pool_slots || request.world_size > hardware_cores;
  // The cores are the run's own when it takes the whole pool (the scheduler starts nothing beside
  // it) and fits the machine: then each rank is pinned to its cores. Otherwise two concurrent
  // mpiruns would pin their ranks to the same first cores, so nothing is bound.
  const bool own_cores =
      request.slots >= settings.pool_slots && request.slots <= hardware_cores && !oversubscribed;
  for (const std::string& b :
       BindingArguments(own_cores, request.cpus_per_rank, settings.mpirun_args)) {
    args.push_back(b);
  }
  if (as_root) args.push_back("--allow-run-as-root");
  if (oversubscribed) args.push_back("--oversubscribe");
  args.insert(args.end(), settings.mpirun_args.begin(), settings.mpirun_args.end());
  for (const auto& [name, value] : RequestEnvironment(request, {})) {
    args.push_back("-x");  // to every rank, on every node
    args.push_back(name);
  }
  args.insert(args.end(), request.rank_command.begin(), request.rank_command.end());
  return args;
}

std::vector<std::string> BindingArguments(bool own_cores, int cpus_per_rank,
                                          const std::vector<std::string>& user_args) {
  for (const std::string& a : user_args) {
    if (a == "--bind-to" || a == "-bind-to") return {};  // the spec's own binding
  }
  if (!own_cores) return {"--bind-to", "none"};
  if (cpus_per_rank > 1) {
    return {"--map-by", "slot:PE=" + std::to_string(cpus_per_rank), "--bind-to", "core"};
  }
  return {"--bind-to", "core"};
}

std::map<std::string, std::string> LaunchEnvironmentOverrides(
    const std::map<std::string, std::string>& spec_env,
    const std::map<std::string, std::string>& current) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : DefaultLaunchEnv()) {
    if (!current.count(k)) out[k] = v;
  }
  for (const auto& [k, v] : spec_env) out[k] = v;
  return out;
}

std::map<std::string, std::string> RequestEnvironment(
    const LaunchRequest& request, const std::map<std::string, std::string>& current) {
  std::map<std::string, std::string> out = request.env;
  if (!request.gpu_ids.empty()) {
    out[kCudaVisibleDevices] = CudaVisibleDevices(request.gpu_ids, current);
  }
  return out;
}

std::unique_ptr<Launcher> MakeLocalLauncher(LocalLaunchSettings settings) {
  return std::make_unique<LocalLauncher>(std::move(settings));
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace batchlab::orchestrator
