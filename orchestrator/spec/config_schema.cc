#include "orchestrator/spec/config_schema.h"

#include <fmt/format.h>

#include "base/config_check.h"
#include "base/config_fields.h"

namespace batchlab::orchestrator {

using nlohmann::json;

bool IsDerivedField(const std::string& p) {
  const config::Field* f = config::FindField(p);
  return f != nullptr && f->reader == config::Reader::kOrchestrator;
}

Status ValidateConfigValue(const std::string& dotted_path, const json& value,
                           const std::string& where, bool user_program) {
  return config::CheckValue(dotted_path, value, where, {user_program, false});
}

Status ValidateConfigObject(const json& base, const std::string& where, bool user_program) {
  return config::CheckObject(base, where, {user_program, false});
}

json ConfigDefaults() { return config::Defaults(config::Reader::kEveryProgram); }

Status ValidateBuiltinRunnerFields(const json& config, const std::string& where_prefix) {
  for (const config::Field& f : config::Root().children) {
    if (!f.users_own_object) continue;
    auto it = config.find(f.name);
    if (it == config.end()) continue;
    const std::string where = where_prefix.empty() ? f.name : where_prefix + "." + f.name;
    BATCHLAB_RETURN_IF_ERROR(config::CheckField(f, *it, where));
  }
  return OkStatus();
}

std::vector<std::string> SettableConfigPaths() {
  std::vector<std::string> out;
  for (const config::Field* f : config::AllFields()) {
    if (f->reader == config::Reader::kOrchestrator) continue;
    // Below a derived object (branch) nothing is settable either.
    bool below_derived = false;
    for (size_t dot = f->path.find('.'); dot != std::string::npos;
         dot = f->path.find('.', dot + 1)) {
      below_derived = below_derived || IsDerivedField(f->path.substr(0, dot));
    }
    if (!below_derived) out.push_back(f->path);
  }
  return out;
}

StatusOr<long long> DatasetSize(const json& data) {
  if (data.contains("samples")) return data["samples"].get<long long>();
  std::string name = data.value("name", "fashion-mnist");
  if (name == "fashion-mnist") return 60000LL;
  return InvalidArgumentError(
      fmt::format("the training set size of data.name \"{}\" is unknown; set data.samples", name));
}

}  // namespace batchlab::orchestrator
