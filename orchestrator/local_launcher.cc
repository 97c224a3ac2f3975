#include "orchestrator/local_launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <nlohmann/json.hpp>

extern char** environ;

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;

// Runs in the forked child before exec: own process group (so Terminate reaches every rank),
// and SIGTERM when the orchestrator dies (so a killed orchestrator leaves no job behind).
struct ChildSetup : bp::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor& /*exec*/) const {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
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

bool ProcessAlive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

std::string CmdlineOf(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

// Signals the process group, then waits up to `grace` for its leader to disappear.
void StopGroup(pid_t pgid, std::chrono::milliseconds grace) {
  if (pgid <= 0) return;
  kill(-pgid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (ProcessAlive(pgid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pgid, SIGKILL);
}

class LocalJob final : public Job {
 public:
  LocalJob(bp::child child, std::string host) : child_(std::move(child)), host_(std::move(host)) {
    pgid_ = child_.id();
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
      // The ranks (same process group) may outlive an mpirun that died abnormally.
      kill(-pgid_, SIGKILL);
    }
    s.done = true;
    if (WIFEXITED(raw_status_)) s.exit_code = WEXITSTATUS(raw_status_);
    if (WIFSIGNALED(raw_status_)) s.signal = WTERMSIG(raw_status_);
    return s;
  }

  void Terminate() override {
    if (!finished_) kill(-pgid_, SIGTERM);
  }
  void Kill() override {
    if (!finished_) kill(-pgid_, SIGKILL);
  }

 private:
  bp::child child_;
  std::string host_;
  pid_t pgid_ = 0;
  bool finished_ = false;
  int raw_status_ = 0;
};

class LocalLauncher final : public Launcher {
 public:
  explicit LocalLauncher(LocalLaunchSettings settings)
      : settings_(std::move(settings)), host_(HostName()) {
    overrides_ = LaunchEnvironmentOverrides(settings_.env, CurrentEnvironment());
  }

  const char* name() const override { return "local"; }

  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& request) override {
    boost::filesystem::path mpirun = settings_.mpirun;
    if (settings_.mpirun.find('/') == std::string::npos) {
      mpirun = bp::search_path(settings_.mpirun);
      if (mpirun.empty()) {
        return FailedPreconditionError(
            fmt::format("`{}` is not in PATH; install openmpi-bin (scripts/install-deps.sh)",
                        settings_.mpirun));
      }
    }
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    std::vector<std::string> args =
        MpirunArguments(settings_, request, geteuid() == 0, cores > 0 ? cores : 1);
    bp::environment env = boost::this_process::environment();
    for (const auto& [k, v] : overrides_) env[k] = v;
    const std::string dir = request.attempt_dir;
    try {
      bp::child child(mpirun, bp::args(args), env,
                      bp::std_in<bp::null, bp::std_out>(dir + "/stdout.log"),
                      bp::std_err > (dir + "/stderr.log"), bp::start_dir(dir), ChildSetup{});
      nlohmann::json launch = {
          {"backend", "local"}, {"pid", child.id()}, {"host", host_}, {"argv", args}};
      std::ofstream(dir + "/launch.json") << launch.dump(2) << "\n";
      return std::unique_ptr<Job>(std::make_unique<LocalJob>(std::move(child), host_));
    } catch (const bp::process_error& e) {
      return UnavailableError(fmt::format("cannot start {}: {}", mpirun.string(), e.what()));
    }
  }

  void CleanUpStale(const std::string& attempt_dir) override {
    std::ifstream in(attempt_dir + "/launch.json");
    if (!in) return;
    nlohmann::json launch = nlohmann::json::parse(in, nullptr, false);
    if (!launch.is_object() || launch.value("backend", "") != "local") return;
    if (launch.value("host", "") != host_) return;
    auto pid = static_cast<pid_t>(launch.value("pid", 0));
    // Only a process that is still this attempt's mpirun (pid reuse is possible).
    if (ProcessAlive(pid) && CmdlineOf(pid).find(attempt_dir) != std::string::npos) {
      StopGroup(pid, std::chrono::seconds(5));
    }
  }

 private:
  LocalLaunchSettings settings_;
  std::string host_;
  std::map<std::string, std::string> overrides_;
};

}  // namespace

std::vector<std::string> MpirunArguments(const LocalLaunchSettings& settings,
                                         const LaunchRequest& request, bool as_root,
                                         int hardware_cores) {
  std::vector<std::string> args = {"-np", std::to_string(request.world_size), "--bind-to", "none"};
  if (as_root) args.push_back("--allow-run-as-root");
  if (request.world_size > settings.pool_slots || request.world_size > hardware_cores) {
    args.push_back("--oversubscribe");
  }
  args.insert(args.end(), settings.mpirun_args.begin(), settings.mpirun_args.end());
  args.push_back(settings.runner);
  args.push_back("--config");
  args.push_back(request.config_path);
  return args;
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

std::unique_ptr<Launcher> MakeLocalLauncher(LocalLaunchSettings settings) {
  return std::make_unique<LocalLauncher>(std::move(settings));
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace batchlab::orchestrator
