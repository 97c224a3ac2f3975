#include "orchestrator/spec/config_validation.h"
#include "base/run_protocol.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "orchestrator/process/captured_command.h"
#include "orchestrator/spec/program.h"

namespace batchlab::orchestrator {
namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

// "data.path: ..." -> "data.path"; "model.channels[1]: ..." -> "model.channels"; "" if the
// message does not start with a field path.
std::string FieldOfMessage(const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos) return "";
  std::string field = message.substr(0, message.find('[') < colon ? message.find('[') : colon);
  if (field.empty() || field.find_first_of(" \"'") != std::string::npos || field[0] == '-') {
    return "";
  }
  return field;
}

// Configs that differ only in run_id and seed are judged alike (the programs do not judge those).
std::string DistinctKey(const json& config) {
  json c = config;
  c.erase("run_id");
  c.erase("seed");
  return c.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A temporary folder removed when this goes out of scope.
class ScratchDir {
 public:
  ScratchDir() {
    boost::system::error_code ec;
    path_ = fs::temp_directory_path(ec) / fs::unique_path("batchlab-validate-%%%%-%%%%-%%%%", ec);
    fs::create_directories(path_, ec);
    ok_ = !ec;
  }
  ~ScratchDir() {
    boost::system::error_code ec;
    fs::remove_all(path_, ec);
  }
  bool ok() const { return ok_; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool ok_ = false;
};

}  // namespace

std::string SpecPathOfField(const PlannedRun& run, const std::string& field) {
  std::string best_path, best_source;
  for (const auto& [path, source] : run.sources) {
    const bool related =
        field == path || field.rfind(path + ".", 0) == 0 || path.rfind(field + ".", 0) == 0;
    if (related && path.size() > best_path.size()) best_path = path, best_source = source;
  }
  if (!best_source.empty()) return best_source;
  return field.empty() ? "base" : "base." + field;
}

Status ValidateRunsWithRunner(const std::string& runner, const std::vector<PlannedRun>& runs,
                              const std::map<std::string, std::string>& env) {
  if (std::none_of(runs.begin(), runs.end(),
                   [](const PlannedRun& r) { return r.program.builtin; })) {
    return OkStatus();
  }
  ScratchDir dir;
  if (!dir.ok()) return InternalError("cannot create a temporary directory for validation");
  // The distinct configs, each with the first run that has it.
  std::vector<const PlannedRun*> checked;
  std::unordered_map<std::string, size_t> seen;
  const std::string lines_path = (dir.path() / "configs.jsonl").string();
  {
    std::ofstream out(lines_path);
    for (const PlannedRun& run : runs) {
      if (!run.program.builtin) continue;
      if (!seen.emplace(DistinctKey(run.config), checked.size()).second) continue;
      json c = run.config;
      c["attempt"] = 1;
      c["metrics_path"] = protocol::MetricsPath(dir.path().string());
      out << c.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      checked.push_back(&run);
    }
    if (!out) return InternalError(fmt::format("cannot write {}", lines_path));
  }
  // In an empty folder, as a run starts in its fresh attempt folder: a relative data path is
  // judged as the run would see it.
  const std::string cwd = (dir.path() / "cwd").string();
  boost::system::error_code ec;
  fs::create_directories(cwd, ec);
  BATCHLAB_ASSIGN_OR_RETURN(
      CommandResult r, RunCapturedCommand({runner, "--validate-batch", lines_path}, env, cwd));
  if (r.exit_code == 0) return OkStatus();
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  if (r.exit_code != 2) {
    return UnavailableError(fmt::format("`{} --validate-batch` exited {}: {}", runner, r.exit_code,
                                        err.empty() ? r.out : err));
  }
  // One {"line": N, "error": "..."} per rejected config.
  std::vector<std::string> problems;
  std::istringstream lines(r.out);
  std::string text;
  while (std::getline(lines, text)) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j["line"].is_number_integer() || !j["error"].is_string()) continue;
    const long long line = j["line"].get<long long>();
    if (line < 1 || line > static_cast<long long>(checked.size())) continue;
    const PlannedRun& run = *checked[static_cast<size_t>(line - 1)];
    const std::string error = j["error"].get<std::string>();
    problems.push_back(fmt::format("{}: the run with {} is rejected by batchlab-runner: {}",
                                   SpecPathOfField(run, FieldOfMessage(error)),
                                   ParamsText(run.params), error));
  }
  if (problems.empty()) {
    return InvalidArgumentError(
        fmt::format("`{} --validate-batch` rejects the resolved configs: {}", runner,
                    err.empty() ? r.out : err));
  }
  std::string message = problems.front();
  if (problems.size() > 1) {
    message += fmt::format(" (and {} more of the {} distinct resolved configs)",
                           problems.size() - 1, checked.size());
  }
  return InvalidArgumentError(message);
}

Status ValidateResolvedConfigs(const std::vector<PlannedRun>& runs, const LaunchTools& tools,
                               const std::map<std::string, std::string>& env,
                               bool ask_user_programs) {
  if (!tools.runner.empty()) {
    BATCHLAB_RETURN_IF_ERROR(ValidateRunsWithRunner(tools.runner, runs, env));
  }
  // A user program with validate: true is asked about each distinct config, one start each.
  std::set<std::string> asked;
  for (const PlannedRun& run : runs) {
    if (run.program.builtin || !run.program.validate || !ask_user_programs) continue;
    if (!asked.insert(json(run.program.command).dump() + DistinctKey(run.config)).second) continue;
    const std::string who = run.program.command.back();
    Status s = ValidateWithCommand(run.program.command, who, run.program.workdir, run.config, env);
    if (s.code() != StatusCode::kInvalidArgument) {
      BATCHLAB_RETURN_IF_ERROR(s);
      continue;
    }
    const std::string prefix = who + " rejects the resolved config: ";
    std::string error = s.message();
    if (error.rfind(prefix, 0) == 0) error = error.substr(prefix.size());
    return InvalidArgumentError(fmt::format("{}: the run with {} is rejected by {}: {}",
                                            SpecPathOfField(run, FieldOfMessage(error)),
                                            ParamsText(run.params), who, error));
  }
  return OkStatus();
}

}  // namespace batchlab::orchestrator
