#include "orchestrator/spec/launch_options.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace batchlab::orchestrator {
namespace {

// An allowed option: its spellings and how many values follow it.
struct Option {
  std::vector<std::string> names;
  int values = 0;
  std::vector<std::string> choices;  // allowed values of a one-value option (empty: any)
};

// Options refused with a reason more useful than "not allowed".
struct Refusal {
  std::vector<std::string> names;
  const char* reason;
};

const std::vector<Option>& MpirunOptions() {
  static const std::vector<Option> options = {
      {{"--mca", "-mca"}, 2, {}},  // NAME VALUE; NAME from the MCA families below
      {{"-x"}, 1, {}},             // NAME or NAME=VALUE: export an environment variable
      {{"--bind-to", "-bind-to"},
       1,
       {"none", "hwthread", "core", "l1cache", "l2cache", "l3cache", "socket", "numa", "board"}},
      {{"--map-by", "-map-by"}, 1, {}},
      {{"--rank-by", "-rank-by"}, 1, {}},
      {{"--report-bindings", "-report-bindings"}, 0, {}},
      {{"--display-map", "-display-map"}, 0, {}},
      {{"--display-allocation", "-display-allocation"}, 0, {}},
      {{"--tag-output", "-tag-output"}, 0, {}},
      {{"--timestamp-output", "-timestamp-output"}, 0, {}},
      {{"--oversubscribe", "-oversubscribe"}, 0, {}},
      {{"--use-hwthread-cpus", "-use-hwthread-cpus"}, 0, {}},
      {{"--allow-run-as-root"}, 0, {}},
      {{"--verbose", "-v"}, 0, {}},
      {{"--quiet", "-q"}, 0, {}},
  };
  return options;
}

// MCA parameters of the transport and collective layers: how bytes move, never what runs where.
const std::vector<std::string>& McaFamilies() {
  static const std::vector<std::string> families = {"btl", "pml", "mtl", "coll", "osc", "mpi"};
  return families;
}

const std::vector<Refusal>& MpirunRefusals() {
  static const std::vector<Refusal> refusals = {
      {{"-np", "-n", "--np", "--n", "-c"},
       "overrides the rank count, which batchlab sets from nodes x ranks_per_node"},
      {{":"}, "starts a second program (MPMD); a run is one program"},
      {{"-H", "--host", "-host", "--hostfile", "-hostfile", "--machinefile", "-machinefile",
        "--default-hostfile", "-default-hostfile", "--add-host", "--add-hostfile", "--launch-agent",
        "-launch-agent", "--prefix", "-prefix"},
       "chooses hosts or how to reach them, which belongs to the backend (local: this machine; "
       "slurm: the job's allocation)"},
      {{"--report-pid",     "-report-pid", "--report-uri", "-report-uri", "--output-filename",
        "-output-filename", "--xml",       "-xml",         "--app",       "-app",
        "--preload-files",  "--tune",      "-tune",        "--am",        "-am",
        "--wdir",           "-wdir",       "-wd",          "--path",      "-path"},
       "reads or writes files, or moves the run, outside its attempt folder"},
      {{"--timeout", "-timeout"},
       "ends the job behind batchlab's back; use resources.timeout_seconds"},
  };
  return refusals;
}

const std::vector<Option>& SbatchOptions() {
  static const std::vector<Option> options = {
      {{"--account", "-A"}, 1, {}},
      {{"--qos", "-q"}, 1, {}},
      {{"--constraint", "-C"}, 1, {}},
      {{"--mem"}, 1, {}},
      {{"--mem-per-cpu"}, 1, {}},
      {{"--mem-per-gpu"}, 1, {}},
      {{"--gres"}, 1, {}},
      {{"--gpus", "-G"}, 1, {}},
      {{"--gpus-per-node"}, 1, {}},
      {{"--gpus-per-task"}, 1, {}},
      {{"--reservation"}, 1, {}},
      {{"--comment"}, 1, {}},
      {{"--exclude", "-x"}, 1, {}},
      {{"--nodelist", "-w"}, 1, {}},
      {{"--nice"}, 1, {}},
      {{"--licenses", "-L"}, 1, {}},
      {{"--mail-type"}, 1, {}},
      {{"--mail-user"}, 1, {}},
      {{"--exclusive"}, 0, {}},
      {{"--contiguous"}, 0, {}},
      {{"--requeue"}, 0, {}},
      {{"--no-requeue"}, 0, {}},
      {{"--spread-job"}, 0, {}},
  };
  return options;
}

const std::vector<Refusal>& SbatchRefusals() {
  static const std::vector<Refusal> refusals = {
      {{"--nodes", "-N", "--ntasks", "-n", "--ntasks-per-node", "--ntasks-per-core",
        "--ntasks-per-socket", "--cpus-per-task", "-c", "--cpus-per-gpu"},
       "overrides the job's shape, which batchlab sets from nodes, ranks_per_node and "
       "slurm.cpus_per_task"},
      {{"--time", "-t"}, "overrides the time limit; use slurm.time_limit_minutes"},
      {{"--partition", "-p"}, "use slurm.partition"},
      {{"--output", "-o", "--error", "-e", "--input", "-i", "--chdir", "-D", "--open-mode"},
       "moves the job's files out of its attempt folder"},
      {{"--wrap",
        "--array",
        "-a",
        "--dependency",
        "-d",
        "--job-name",
        "-J",
        "--parsable",
        "--wait",
        "-W",
        "--test-only",
        "--hold",
        "-H",
        "--export",
        "--export-file",
        "--get-user-env",
        "--uid",
        "--gid",
        "--batch",
        "--clusters",
        "-M"},
       "changes what the job runs, how it is named or tracked, or as whom"},
  };
  return refusals;
}

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Names(const std::vector<Option>& options) {
  std::string out;
  for (const Option& o : options) {
    std::string n = o.names.front();
    if (o.values == 1)
      n += o.choices.empty() ? " VALUE" : " (" + fmt::format("{}", fmt::join(o.choices, "|")) + ")";
    if (o.values == 2) n += " NAME VALUE";
    out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

bool HasControlCharacters(const std::string& s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return c == '\0' || c == '\n' || c == '\r'; });
}

bool IsEnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Walks `args` as options of `options` (long ones also as --name=value when `equals_form`).
Status CheckArgs(const std::vector<std::string>& args, const std::string& where,
                 const std::vector<Option>& options, const std::vector<Refusal>& refusals,
                 bool equals_form, const std::string& tool) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    const std::string& arg = args[i];
    if (HasControlCharacters(arg)) {
      return InvalidArgumentError(
          fmt::format("{}: {} contains a NUL or line break", at, Quote(arg)));
    }
    std::string name = arg, inline_value;
    bool has_inline = false;
    if (equals_form && arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      name = arg.substr(0, arg.find('='));
      inline_value = arg.substr(arg.find('=') + 1);
      has_inline = true;
    }
    for (const Refusal& r : refusals) {
      if (Contains(r.names, name)) {
        return InvalidArgumentError(fmt::format(
            "{}: {} is refused: it {} (allowed {} options: {}; docs/spec.md)", at, Quote(arg),
            r.reason, tool, tool == "mpirun" ? MpirunAllowList() : SbatchAllowList()));
      }
    }
    const Option* option = nullptr;
    for (const Option& o : options) {
      if (Contains(o.names, name)) option = &o;
    }
    if (option == nullptr) {
      return InvalidArgumentError(fmt::format(
          "{}: {} is not an allowed {} option{} (allowed: {}; docs/spec.md)", at, Quote(arg), tool,
          arg.empty() || arg[0] != '-' ? " (batchlab names the program itself)" : "",
          tool == "mpirun" ? MpirunAllowList() : SbatchAllowList()));
    }
    std::vector<std::string> values;
    if (has_inline) {
      if (option->values != 1) {
        return InvalidArgumentError(fmt::format("{}: {} takes no \"=value\"", at, Quote(name)));
      }
      values.push_back(inline_value);
    } else {
      for (int v = 0; v < option->values; ++v) {
        if (i + 1 >= args.size()) {
          return InvalidArgumentError(
              fmt::format("{}: {} needs {} value(s) after it", at, Quote(arg), option->values));
        }
        ++i;
        if (HasControlCharacters(args[i])) {
          return InvalidArgumentError(
              fmt::format("{}[{}]: {} contains a NUL or line break", where, i, Quote(args[i])));
        }
        if (args[i] == ":") {
          return InvalidArgumentError(fmt::format(
              "{}[{}]: \":\" is not a value {} accepts (an MPMD ':' would start a second program)",
              where, i, Quote(name)));
        }
        values.push_back(args[i]);
      }
    }
    if (!option->choices.empty() && !Contains(option->choices, values[0])) {
      return InvalidArgumentError(fmt::format("{}: {} {} is not one of {}", at, Quote(name),
                                              Quote(values[0]), fmt::join(option->choices, ", ")));
    }
    if (name == "--mca" || name == "-mca") {
      const std::string& param = values[0];
      bool ok = false;
      for (const std::string& f : McaFamilies()) {
        ok = ok || param == f || param.rfind(f + "_", 0) == 0;
      }
      if (!ok) {
        return InvalidArgumentError(fmt::format(
            "{}: MCA parameter {} is not allowed; only the transport and collective families "
            "{} (and their NAME_* parameters)",
            at, Quote(param), fmt::join(McaFamilies(), ", ")));
      }
    }
    if (name == "-x") {
      const std::string var = values[0].substr(0, values[0].find('='));
      if (!IsEnvName(var)) {
        return InvalidArgumentError(fmt::format(
            "{}: -x {}: {} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", at,
            Quote(values[0]), Quote(var)));
      }
    }
  }
  return OkStatus();
}

}  // namespace

std::string MpirunAllowList() {
  return Names(MpirunOptions()) + "; MCA families " +
         fmt::format("{}", fmt::join(McaFamilies(), ", "));
}
std::string SbatchAllowList() { return Names(SbatchOptions()); }

Status CheckMpirunArgs(const std::vector<std::string>& args, const std::string& where) {
  return CheckArgs(args, where, MpirunOptions(), MpirunRefusals(), /*equals_form=*/false, "mpirun");
}

Status CheckSbatchArgs(const std::vector<std::string>& args, const std::string& where) {
  return CheckArgs(args, where, SbatchOptions(), SbatchRefusals(), /*equals_form=*/true, "sbatch");
}

Status CheckEnvironment(const std::map<std::string, std::string>& env, const std::string& where) {
  for (const auto& [name, value] : env) {
    const std::string at = fmt::format("{}[{}]", where, Quote(name));
    if (!IsEnvName(name)) {
      return InvalidArgumentError(fmt::format(
          "{}: {} is not an environment variable name: use letters, digits and _, not starting "
          "with a digit (no '=', spaces, line breaks or NUL)",
          at, Quote(name)));
    }
    if (value.find('\0') != std::string::npos) {
      return InvalidArgumentError(fmt::format(
          "{}.{}: the value contains a NUL character, which no environment holds", where, name));
    }
  }
  return OkStatus();
}

}  // namespace batchlab::orchestrator
