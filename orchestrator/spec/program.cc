#include "orchestrator/spec/program.h"
#include "base/atomic_file.h"
#include "base/run_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <boost/process/search_path.hpp>

#include "orchestrator/process/captured_command.h"

namespace batchlab::orchestrator {
namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

}  // namespace

bool IsExecutableFile(const std::string& path) {
  boost::system::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

StatusOr<Program> ResolveProgram(const json& config, const std::string& spec_dir,
                                 const std::string& where) {
  Program p;
  auto it = config.find("program");
  if (it == config.end() || it->is_null()) return p;  // the built-in runner
  const json& prog = *it;
  if (!prog.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: {} is not an object {{\"command\": [...]}}", where, prog.dump()));
  }
  p.builtin = false;
  const json* command = prog.contains("command") ? &prog["command"] : nullptr;
  if (command == nullptr || !command->is_array() || command->empty()) {
    return InvalidArgumentError(
        fmt::format("{}.command: is missing or empty; give the program's argument vector, e.g. "
                    "[\"/usr/bin/python3\", \"train.py\"]",
                    where));
  }
  for (size_t i = 0; i < command->size(); ++i) {
    if (!(*command)[i].is_string() || (*command)[i].get<std::string>().empty()) {
      return InvalidArgumentError(fmt::format("{}.command[{}]: {} is not a non-empty string", where,
                                              i, (*command)[i].dump()));
    }
    p.command.push_back((*command)[i].get<std::string>());
  }
  const std::string launch = prog.value("launch", "mpirun");
  if (launch != "mpirun" && launch != "torchrun") {
    return InvalidArgumentError(
        fmt::format("{}.launch: \"{}\" is not one of \"mpirun\", \"torchrun\"", where, launch));
  }
  p.launch = launch == "torchrun" ? LaunchMode::kTorchrun : LaunchMode::kMpirun;
  p.validate = prog.value("validate", false);

  fs::path base = fs::absolute(spec_dir.empty() ? fs::path(".") : fs::path(spec_dir));
  fs::path workdir = prog.value("workdir", ".");
  if (workdir.is_relative()) workdir = base / workdir;
  workdir = workdir.lexically_normal();
  boost::system::error_code ec;
  if (!fs::is_directory(workdir, ec)) {
    return InvalidArgumentError(fmt::format(
        "{}.workdir: {} is not a directory (a relative workdir is taken from the spec file's "
        "folder {})",
        where, workdir.string(), base.lexically_normal().string()));
  }
  p.workdir = workdir.string();

  const std::string& exe = p.command.front();
  if (exe.find('/') == std::string::npos) {
    fs::path found = boost::process::search_path(exe);
    if (found.empty() || !IsExecutableFile(found.string())) {
      return InvalidArgumentError(fmt::format(
          "{}.command[0]: \"{}\" is not in PATH; give an absolute path or install it", where, exe));
    }
    p.command.front() = found.string();
  } else {
    fs::path path = fs::path(exe).is_relative() ? workdir / exe : fs::path(exe);
    path = path.lexically_normal();
    if (!fs::exists(path, ec)) {
      return InvalidArgumentError(fmt::format(
          "{}.command[0]: {} does not exist (a relative path is taken from the workdir {})", where,
          path.string(), p.workdir));
    }
    if (!IsExecutableFile(path.string())) {
      return InvalidArgumentError(fmt::format(
          "{}.command[0]: {} is not an executable file; chmod +x it, or run it through its "
          "interpreter, e.g. [\"/usr/bin/python3\", \"{}\"]",
          where, path.string(), exe));
    }
    p.command.front() = path.string();
  }
  return p;
}

std::vector<std::string> RankCommand(const Program& program, const LaunchTools& tools,
                                     const std::string& config_path) {
  if (program.builtin) return {tools.runner, "--config", config_path};
  std::vector<std::string> argv = {tools.rank_exec, "--"};
  argv.insert(argv.end(), program.command.begin(), program.command.end());
  argv.push_back("--config");
  argv.push_back(config_path);
  return argv;
}

std::vector<std::string> SpawnCommand(const Program& program, const LaunchTools& tools,
                                      int world_size, const std::string& config_path) {
  std::vector<std::string> argv = {tools.rank_exec, "--spawn", std::to_string(world_size), "--"};
  argv.insert(argv.end(), program.command.begin(), program.command.end());
  argv.push_back("--config");
  argv.push_back(config_path);
  return argv;
}

std::map<std::string, std::string> ProgramEnvironment(const std::string& config_path,
                                                      const std::string& master_addr,
                                                      int master_port) {
  return {{"BATCHLAB_CONFIG", config_path},
          {"MASTER_ADDR", master_addr.empty() ? "127.0.0.1" : master_addr},
          {"MASTER_PORT", std::to_string(master_port)}};
}

StatusOr<int> FreeTcpPort(const std::vector<int>& taken) {
  // Ask the kernel for an unused ephemeral port; retry past the ones running jobs were given
  // (they may not listen yet).
  for (int tries = 0; tries < 64; ++tries) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return UnavailableError("cannot create a socket to find a free port");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    close(fd);
    if (port < 0) return UnavailableError("cannot bind a socket on 127.0.0.1 to find a free port");
    if (std::find(taken.begin(), taken.end(), port) == taken.end()) return port;
  }
  return UnavailableError("no free TCP port found on 127.0.0.1");
}

Status ValidateWithCommand(const std::vector<std::string>& command, const std::string& who,
                           const std::string& workdir, const json& config,
                           const std::map<std::string, std::string>& env) {
  boost::system::error_code ec;
  fs::path dir = fs::temp_directory_path(ec) / fs::unique_path("batchlab-validate-%%%%-%%%%", ec);
  fs::create_directories(dir, ec);
  if (ec) {
    return InternalError(fmt::format("cannot create a temporary directory: {}", ec.message()));
  }
  json c = config;
  c["attempt"] = 1;
  c["metrics_path"] = protocol::MetricsPath(dir.string());
  const std::string path = protocol::ConfigPath(dir.string());
  if (Status written = WriteFileAtomically(path, c.dump(2) + "\n"); !written.ok()) {
    fs::remove_all(dir, ec);
    return written.WithContext("validating the config with the program");
  }
  std::vector<std::string> argv = command;
  argv.insert(argv.end(), {"--validate", "--config", path});
  std::map<std::string, std::string> command_env = env;
  command_env["BATCHLAB_CONFIG"] = path;
  auto r = RunCapturedCommand(argv, command_env, workdir);
  fs::remove_all(dir, ec);
  if (!r.ok()) return r.status();
  if (r->exit_code == 0) return OkStatus();
  std::string msg = r->err.empty() ? r->out : r->err;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (r->exit_code == 2) {
    return InvalidArgumentError(fmt::format("{} rejects the resolved config: {}", who, msg));
  }
  std::string shown;
  for (const auto& a : command) shown += (shown.empty() ? "" : " ") + a;
  return UnavailableError(fmt::format("`{} --validate` exited {}: {}", shown, r->exit_code, msg));
}

}  // namespace batchlab::orchestrator
